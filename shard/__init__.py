"""shardsched shard."""
import os

# numpy's OpenBLAS starts a thread per core when it is imported: on a 64-core node 63 threads,
# each with its buffers, all started on the way to the first binding (0.08 s of CPU at each
# start on two cores). The shard's arrays are integers and short vectors, which never call
# BLAS. Set before any of the shard's modules imports numpy; a value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
