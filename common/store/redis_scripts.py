"""Lua scripts of the Redis backend: every write is one script, so checks, the object
write and the event that announces it happen atomically.

Per kind there are two hashes, field = object key:
  obj:<Kind>  the object's JSON exactly as Python's orjson wrote it on create/update;
  st:<Kind>   a small JSON "state" record: rv (id of the event that last wrote the object),
              uid, and for pods node (spec.nodeName), nom (status.nominatedNodeName), cond
              (the PodScheduled condition), gated (present while the pod has scheduling
              gates) and p, the patch accumulated by bind/nominate/
              unschedulable since the last full write (see podstatus.py).
Scripts read and rewrite only state records, never whole objects: Redis's cjson would
turn [] into {} and round large integers. State records hold strings only, which cjson
round-trips exactly. Python folds `p` into the object when it reads it.

The stream is trimmed as each script writes (ARGV[1]): by age, 'a<ms>' keeping the events
younger than that (entry ids are Redis's milliseconds), or by count, about that many.

Stream entries: prev (the id of the entry before it), t (ADDED|MODIFIED|DELETED), k (kind),
n (key), o (object JSON), p (patch JSON, when there is one), s (the status hint, when there
is one), always in this order: readers take the first five by position, the optional ones by
name. The entry id is the event's rv.

The status hint: a pod's update that changed its status only (the same uid and node, and the
same digest `h` of everything but status and node as the write before: both state records'
`h`, see redis_store._state) carries the new phase, startTime and nominatedNodeName (the
state's `s`, which is not kept), so that a reader holding the pod bound can apply it without
decoding the document (common.store.base.EventSkip). Every other write has none.
"""

_EMIT = """
local last_id, trim_how, trim_at
local function emit(t, kind, key, o, st, hint)
  if not last_id then
    local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
    last_id = last and last[1] or '0-0'
    if string.sub(ARGV[1], 1, 1) == 'a' then  -- 'a<ms>': keep the events younger than that
      local now = redis.call('TIME')
      local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) - tonumber(string.sub(ARGV[1], 2))
      trim_how, trim_at = 'MINID', string.format('%.0f', math.max(ms, 0))
    else  -- a count: keep about that many
      trim_how, trim_at = 'MAXLEN', ARGV[1]
    end
  end
  local fields = {'prev', last_id, 't', t, 'k', kind, 'n', key, 'o', o}
  if st.p then
    fields[#fields + 1] = 'p'
    fields[#fields + 1] = cjson.encode(st.p)
  end
  if hint then
    fields[#fields + 1] = 's'
    fields[#fields + 1] = hint
  end
  last_id = redis.call('XADD', KEYS[1], trim_how, '~', trim_at, '*', unpack(fields))
  st.rv = last_id
  return last_id
end
"""

# KEYS: stream, obj hash, state hash. ARGV: trim (see above), "create"|"update", kind, then per object
# key, object JSON, state JSON (without rv), expected rv ("" = any).
# Returns per object the new rv, or a reason: AlreadyExists, NotFound, UIDMismatch,
# ResourceVersionMismatch, NodeNameImmutable (an update may not move or unbind a bound pod).
PUT = _EMIT + """
local create, kind = ARGV[2] == 'create', ARGV[3]
local out = {}
for i = 4, #ARGV, 4 do
  local key, o, expected = ARGV[i], ARGV[i + 1], ARGV[i + 3]
  local st = cjson.decode(ARGV[i + 2])
  local hint = st.s
  st.s = nil  -- handed over for the event, never kept
  local cur = redis.call('HGET', KEYS[3], key)
  local reason
  if create then
    if cur then reason = 'AlreadyExists' end
  elseif not cur then
    reason = 'NotFound'
  else
    cur = cjson.decode(cur)
    if cur.uid ~= st.uid then
      reason = 'UIDMismatch'
    elseif expected ~= '' and cur.rv ~= expected then
      reason = 'ResourceVersionMismatch'
    elseif (cur.node or '') ~= '' and cur.node ~= st.node then
      reason = 'NodeNameImmutable'
    end
  end
  if reason then
    out[#out + 1] = reason
  else
    if create or not st.h or cur.h ~= st.h or (cur.node or '') ~= (st.node or '') then
      hint = nil  -- more than the status changed (or cannot be told): no hint
    end
    out[#out + 1] = emit(create and 'ADDED' or 'MODIFIED', kind, key, o, st, hint)
    redis.call('HSET', KEYS[2], key, o)
    redis.call('HSET', KEYS[3], key, cjson.encode(st))
  end
end
return out
"""

# KEYS: stream, obj hash, state hash. ARGV: trim (see above), kind, then per object key, uid ("" = any).
# Returns per object "" (deleted), NotFound or UIDMismatch.
DELETE = _EMIT + """
local kind = ARGV[2]
local out = {}
for i = 3, #ARGV, 2 do
  local key, uid = ARGV[i], ARGV[i + 1]
  local st = redis.call('HGET', KEYS[3], key)
  if not st then
    out[#out + 1] = 'NotFound'
  else
    st = cjson.decode(st)
    if uid ~= '' and st.uid ~= uid then
      out[#out + 1] = 'UIDMismatch'
    else
      emit('DELETED', kind, key, redis.call('HGET', KEYS[2], key), st)
      redis.call('HDEL', KEYS[2], key)
      redis.call('HDEL', KEYS[3], key)
      out[#out + 1] = ''
    end
  end
end
return out
"""

# KEYS: stream, Pod obj hash, Pod state hash. ARGV: trim (see above), op, now, then per pod key, arg, uid.
#   op bind:          arg = node; fails with PodNotFound, UIDMismatch, AlreadyBound or
#                     SchedulingGated.
#   op nominate:      arg = node ("" clears); Skip when gone, bound or unchanged.
#   op unschedulable: arg = message; Skip when gone, bound or the condition is unchanged.
# Returns per pod "" (written) or the reason.
PATCH = _EMIT + """
local op, now = ARGV[2], ARGV[3]
local out = {}
for i = 4, #ARGV, 3 do
  local key, arg, uid = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local st = redis.call('HGET', KEYS[3], key)
  local reason
  if st then st = cjson.decode(st) end
  if op == 'bind' then
    if not st then reason = 'PodNotFound'
    elseif uid ~= '' and st.uid ~= uid then reason = 'UIDMismatch'
    elseif (st.node or '') ~= '' then reason = 'AlreadyBound'
    elseif st.gated then reason = 'SchedulingGated' end
  elseif not st or (st.node or '') ~= '' then
    reason = 'Skip'
  elseif op == 'nominate' and (st.nom or '') == arg then
    reason = 'Skip'
  elseif op == 'unschedulable' and st.cond and st.cond.status == 'False'
      and st.cond.reason == 'Unschedulable' and st.cond.message == arg then
    reason = 'Skip'
  end
  if reason then
    out[#out + 1] = reason
  else
    local p = st.p or {}
    local cond
    if op == 'bind' then
      st.node, st.nom = arg, ''
      p.node, p.phase, p.nominated = arg, 'Running', ''
      cond = {status = 'True'}
    elseif op == 'nominate' then
      st.nom, p.nominated = arg, arg
    else
      cond = {status = 'False', reason = 'Unschedulable', message = arg}
    end
    if cond then
      -- lastTransitionTime moves only when the status flips (see podstatus.apply_patch)
      local old_time = p.cond and p.cond.status == cond.status and p.cond.time
      st.cond = {status = cond.status, reason = cond.reason, message = cond.message}
      cond.time = old_time or now
      p.cond = cond
    end
    st.p = p
    emit('MODIFIED', 'Pod', key, redis.call('HGET', KEYS[2], key), st)
    redis.call('HSET', KEYS[3], key, cjson.encode(st))
    out[#out + 1] = ''
  end
end
return out
"""

# KEYS: the lease key, the role's lease index. ARGV: holder, ttl in ms, the lease's id.
# Takes or renews the lease unless another holder's is live; 1 when held.
ACQUIRE_LEASE = """
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
return 1
"""

# KEYS: the lease key, the role's lease index. ARGV: holder ('' = anyone), the lease's id.
DROP_LEASE = """
if ARGV[1] == '' or redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[2])
  return 1
end
return 0
"""

# KEYS: a role's lease index (a set of ids). ARGV: the prefix of that role's lease keys.
# Returns id, address, id, address, ... of live leases and forgets expired ids, atomically so
# that a lease renewed meanwhile is never dropped from the index.
LEASES = """
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local address = redis.call('GET', ARGV[1] .. id)
  if address then
    out[#out + 1] = id
    out[#out + 1] = address
  else
    redis.call('SREM', KEYS[1], id)
  end
end
return out
"""
