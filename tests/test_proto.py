"""The committed gRPC modules must match shardsched.proto."""
from proto import generate


def test_generated_modules_are_current():
    assert generate.stale() == [], "run: python -m proto.generate"
