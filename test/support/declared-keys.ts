/**
 * A check that every Lua script of the Redis stores declares every key it touches in `KEYS`
 * (issue 23, item 9): Redis does not enforce it on one server or one slot, so the check is made
 * here. `checkDeclaredKeys()` makes every client of this process run its scripts with `EVAL` (an
 * `EVALSHA` answers `NOSCRIPT`, so `RedisScript` falls back to `EVAL`) and puts a prelude before
 * each script that shadows `redis.call`/`redis.pcall`: a command whose key is not in `KEYS` fails
 * the script with `undeclared key`. The key positions are those of the commands the stores use
 * (every key for `DEL`/`EXISTS`/`MGET`/`UNLINK`, none for `TIME`, the first argument otherwise).
 */
import { Redis } from 'ioredis';

const PRELUDE = `local __redis = redis
local __declared = {}
for _, k in ipairs(KEYS) do __declared[k] = true end
local __every = { DEL = true, UNLINK = true, EXISTS = true, MGET = true, TOUCH = true }
local __none = { TIME = true, PING = true, ECHO = true }
local function __check(cmd, ...)
  local c = string.upper(cmd)
  if __none[c] then return end
  local args = {...}
  local n = 1
  if __every[c] then n = #args end
  for i = 1, n do
    if not __declared[args[i]] then error('undeclared key ' .. tostring(args[i]) .. ' in ' .. c) end
  end
end
local redis = setmetatable({
  call = function(cmd, ...) __check(cmd, ...) return __redis.call(cmd, ...) end,
  pcall = function(cmd, ...) __check(cmd, ...) return __redis.pcall(cmd, ...) end,
}, { __index = __redis })
`;

/** Installs the check for every ioredis client (single server and Cluster) of this process. */
export function checkDeclaredKeys(): void {
  // Redis and Cluster share ioredis's Commander prototype, where `eval` and `evalsha` live.
  const commander = Object.getPrototypeOf(Redis.prototype) as Record<string, (...args: unknown[]) => Promise<unknown>>;
  if ((commander as { __declaredKeys?: boolean }).__declaredKeys) return;
  const evaluate = commander.eval!;
  commander.evalsha = async () => { throw new Error('NOSCRIPT (declared-keys check: run by EVAL)'); };
  commander.eval = function (this: unknown, lua: unknown, ...rest: unknown[]) {
    return evaluate.call(this, `${PRELUDE}${String(lua)}`, ...rest);
  };
  (commander as { __declaredKeys?: boolean }).__declaredKeys = true;
}
