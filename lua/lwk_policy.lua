-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- slurm-lwk's policy, a Lua module for the site's job_submit.lua: the
-- controller side of the lwk SPANK plugin and the die-granular placement
-- policy (CaSAS, section 3.1.1).  The site's script loads it and calls it
-- first (lua/job_submit.lua is that script, and an example):
--
--   local lwk = dofile("/usr/share/slurm-lwk/lwk_policy.lua")
--   function slurm_job_submit(job_desc, part_list, submit_uid)
--     local rc = lwk.job_submit(job_desc, part_list, submit_uid)
--     if rc ~= slurm.SUCCESS then return rc end
--     ... the site's own rules ...
--
-- Two jobs that share a die (one L3 cache and one memory controller)
-- slow each other down, so in the partitions the site marks, the die is
-- the smallest unit a job gets.  Slurm does not know dies: the site
-- declares each die as a Slurm socket (SlurmdParameters=l3cache_as_socket
-- or numa_node_as_socket, or Sockets=/CoresPerSocket= in slurm.conf) and
-- sets SelectTypeParameters=CR_Socket on those partitions, so Slurm never
-- puts two jobs on one die; this script rounds requests up to whole dies
-- (the job is charged for and may use what it gets), sends
-- --contention-aware jobs to a co-scheduling partition, gives --lwk jobs
-- whole nodes, and refuses what cannot be placed, telling the user the
-- rule and the nearest valid request.  Site config: lwk_policy.conf next
-- to the script that loaded this module, which slurmctld reads next to
-- slurm.conf (see lwk_policy.conf(5)).
--
-- slurmctld on Debian 12 embeds Lua 5.1; this script runs on 5.1 to 5.4
-- (no integer division operator, no bit operators, unpack guarded).
--
-- The plugin's options arrive by three roads, and the policy reads all:
--  * job_desc.spank_job_env, a table indexed from 0 (ipairs would skip
--    entry 0), as _SLURM_SPANK_OPTION_lwk_<option>=<value>, with '-'
--    written '_' and "(null)" for a flag given without a value: what
--    sbatch/srun/salloc put there for --lwk and for
--    SLURM_SPANK__SLURM_SPANK_OPTION_lwk_<option> in their own
--    environment (Slurm's spank_process_env_options);
--  * a batch job's environment (job_desc.environment, readable by name
--    only): slurmstepd takes _SLURM_SPANK_OPTION_lwk_<option> from it as
--    if given on the command line, and every srun in the script takes
--    SLURM_SPANK__SLURM_SPANK_OPTION_lwk_<option> from it, so
--    "sbatch --export=ALL,SLURM_SPANK__..." reaches the nodes without
--    ever being in spank_job_env;
--  * for scontrol update, the job record: its spank_job_env, and the
--    admin comment where job_submit wrote what came from the environment
--    (slurmctld does not show a job record's environment to Lua).
-- Safety: an internal error rejects only jobs that asked for the plugin's
-- options or that fall under the policy; every other job passes untouched.

local M = {}

M.PREFIX = "_SLURM_SPANK_OPTION_lwk_"
M.OPTIONS = { lwk = "lwk", sync_monitor = "sync-monitor",
              contention_aware = "contention-aware" }
M.NO_VAL = 4294967294
M.NO_VAL16 = 65534
M.CONFIG_NAME = "lwk_policy.conf"

---------------------------------------------------------------------------
-- Reading the job

-- each_spank_option(job, f): f(option, value) for each of the plugin's
-- options in a spank_job_env table (job_desc or job_rec), in order, the
-- value as written ("(null)" for a flag given without a value).
local function each_spank_option(job, f)
  local env = job and job.spank_job_env
  if type(env) ~= "table" then return end
  local size = tonumber(job.spank_job_env_size)
  local i = 0
  while true do
    if size and i >= size then break end
    local entry = env[i]
    if entry == nil then
      if size then i = i + 1 else break end
    else
      entry = tostring(entry)
      if entry:sub(1, #M.PREFIX) == M.PREFIX then
        local rest = entry:sub(#M.PREFIX + 1)
        local eq = rest:find("=", 1, true)
        local name = eq and rest:sub(1, eq - 1) or rest
        if M.OPTIONS[name] then
          f(M.OPTIONS[name], eq and rest:sub(eq + 1) or "")
        end
      end
      i = i + 1
    end
    if i > 4096 then break end -- a corrupt size never loops for long
  end
end

-- The plugin's options in a spank_job_env table (job_desc or job_rec):
-- { ["lwk"] = "os=2", ["sync-monitor"] = "" }.  An option given without
-- a value maps to "".
function M.spank_options(job)
  local found = {}
  each_spank_option(job, function(option, value)
    found[option] = (value == "(null)") and "" or value
  end)
  return found
end

-- The names under which an option in a batch job's environment reaches
-- the nodes: slurmstepd's remote option (first) and srun's
-- SLURM_SPANK_ form.
local function env_names(name)
  return { M.PREFIX .. name, "SLURM_SPANK_" .. M.PREFIX .. name }
end

-- The plugin's options in a batch job's environment.  slurmctld gives
-- Lua a table read by name; it logs a line for each read of a job
-- without one (srun, salloc), so only batch jobs (a script) are asked.
function M.env_options(job_desc)
  local found = {}
  if not job_desc or job_desc.script == nil then return found end
  local env = job_desc.environment
  if env == nil then return found end
  for name, option in pairs(M.OPTIONS) do
    for _, var in ipairs(env_names(name)) do
      local value = env[var]
      if value ~= nil and found[option] == nil then
        value = tostring(value)
        found[option] = (value == "(null)") and "" or value
      end
    end
  end
  return found
end

-- All the options of a job being submitted: the command line's
-- (spank_job_env) win over the environment's.  M.options_split also
-- returns those that only the environment carries.
function M.options(job_desc)
  return (M.options_split(job_desc))
end

function M.options_split(job_desc)
  local found = M.spank_options(job_desc)
  local env_only = {}
  for option, value in pairs(M.env_options(job_desc)) do
    if found[option] == nil then
      found[option] = value
      env_only[option] = value
    end
  end
  return found, env_only
end

-- What job_submit writes in the admin comment (which users cannot set
-- or change) for options only the environment carries, so that
-- scontrol update judges them too: "lwk-options: lwk,sync-monitor".
-- Names only: the rules look at an option's presence, and a value may
-- hold anything (a sync-monitor dir= path may hold ';' or spaces).
M.MARK = "lwk-options:"

function M.mark(opts)
  local names = {}
  for _, name in ipairs({ "lwk", "sync-monitor", "contention-aware" }) do
    if opts[name] then names[#names + 1] = name end
  end
  return M.MARK .. " " .. table.concat(names, ",")
end

-- The options of a pending job's record (scontrol update).  The last
-- mark is ours: job_submit appends it to what the comment held.
function M.record_options(job_rec)
  local found = M.spank_options(job_rec)
  local note = job_rec and job_rec.admin_comment
  if type(note) == "string" then
    local last, from = nil, 1
    while true do
      local i = note:find(M.MARK, from, true)
      if not i then break end
      last, from = i, i + 1
    end
    if last then
      local rest = note:sub(last + #M.MARK)
      local names = rest:match("^%s*([%a%-,]*)") or ""
      if names:sub(1, 2) == "--" then
        -- Written before names only ("--lwk=os=1 --sync-monitor"), by a
        -- job still pending from then: its words up to the first ';'.
        names = (rest:match("^([^;]*)") or ""):gsub("=%S*", ""):gsub("%-%-", ","):gsub("%s", "")
      end
      for name in names:gmatch("[^,]+") do
        for _, option in pairs(M.OPTIONS) do
          if option == name and found[option] == nil then found[option] = "" end
        end
      end
    end
  end
  return found
end

---------------------------------------------------------------------------
-- Judging the options' values as the plugin's parser does on the nodes
-- (spank/common/kv.c and options.c): what a node would refuse is refused
-- here, at submission, with the node's words, so that it never reaches a
-- node, where under on_error=drain_node a refused value drains it.  The
-- cases both parsers must agree on are in
-- testsuite/fixtures/options/cases.tsv.  Numbers are doubles, on 5.3 and
-- 5.4 too (whose integers wrap around where the node's parser sees the
-- overflow): each bound is below 2^53, and a number of more than 15
-- significant digits is out of every range.

local KIB, MIB, TIB = 1024, 1048576, 1099511627776
local MSEC, SEC = 1000, 1000000
local MAX_ARG = 4096 -- the node's buffer for a whole value, NUL included

local GRAMMARS = {
  ["lwk"] = {
    { "os", "uint", 1, 1024 },
    { "mem", "size", 0, 64 * TIB },
    { "numa", "list", 0, 1024 },
    { "backend", "enum", { "auto", "linux", "mckernel" } },
    { "hugepage", "enum", { "none", "2M", "1G" } },
    { "deleg_mem", "size", 16 * MIB, TIB },
    { "deleg_cpu", "percent", 100, 1024 * 10000 },
  },
  ["sync-monitor"] = {
    { "interval", "duration", 10 * MSEC, 3600 * SEC },
    { "offset", "duration", 0, 3600 * SEC },
    { "dir", "path", 1024 },
    { "source", "enum", { "auto", "taskstats", "proc", "bpf" } },
    { "idle", "percent", 0, 100 * 100 },
    { "fullscan", "uint", 1, 1000000 },
    { "flush", "uint", 1, 1000000 },
    { "buffer", "size", 64 * KIB, 64 * MIB },
  },
  ["contention-aware"] = {
    { "probe", "duration", 10 * MSEC, 60 * SEC },
    { "min_dies", "uint", 1, 1024 },
    { "max_dies", "uint", 0, 1024 },
    { "event", "name", 64 },
    { "objective", "enum", { "antt", "stp" } },
  },
}

-- Leading digits of s from i: their value (nil past 15 significant
-- digits: out of every range) and the index after them; nil, i if none.
local function digits(s, i)
  local d = s:match("^%d+", i)
  if not d then return nil, i end
  local sig = d:gsub("^0+", "")
  if #sig > 15 then return false, i + #d end
  return tonumber(sig ~= "" and sig or "0") + 0.0, i + #d
end

local SIZE_UNITS = { K = KIB, M = MIB, G = 1073741824, T = TIB }

local function parse_size(v)
  local n, i = digits(v, 1)
  if n == nil then return nil end
  local mult = SIZE_UNITS[v:sub(i, i):upper()]
  if mult then
    i = i + 1
    -- The spellings people type: 4G, 4GB, 4GiB.
    if v:sub(i, i) == "i" and (v:sub(i + 1, i + 1) == "B" or v:sub(i + 1, i + 1) == "b") then
      i = i + 2
    elseif v:sub(i, i) == "B" or v:sub(i, i) == "b" then
      i = i + 1
    end
  elseif i <= #v then
    return nil
  end
  if i <= #v or n == false then return nil end
  return n * (mult or 1)
end

local DURATION_UNITS = { us = 1, ms = MSEC, [""] = MSEC, s = SEC }

local function parse_duration(v)
  local n, i = digits(v, 1)
  local mult = DURATION_UNITS[v:sub(i)]
  if not n or not mult then return nil end
  return n * mult
end

local function parse_percent(v)
  local whole, i = digits(v, 1)
  if whole == nil then return nil end
  local frac = 0
  if v:sub(i, i) == "." then
    local f = v:match("^%d+", i + 1)
    if not f or #f > 2 then return nil end -- finer than 0.01% means nothing
    frac = tonumber(f) * (#f == 1 and 10 or 1)
    i = i + 1 + #f
  end
  if v:sub(i, i) == "%" then i = i + 1 end
  if i <= #v or whole == false then return nil end
  return whole * 100 + frac
end

-- A list of numbers below max, ':' between members ("0:2-3"), as the
-- node's CPU-list parser reads it once ':' became ','.
local function list_ok(v, max)
  if v == "auto" then return true end
  local s = v:gsub(",", " "):gsub(":", ",")
  local i, count = 1, 0
  if s == "" then return false end
  while true do
    local lo, hi
    lo, i = digits(s, i)
    if not lo or lo >= max then return false end
    hi = lo
    if s:sub(i, i) == "-" then
      hi, i = digits(s, i + 1)
      if not hi or hi >= max or hi < lo then return false end
    end
    count = count + 1
    local c = s:sub(i, i)
    if c == "," then
      i = i + 1
    else
      if c == "\n" then i = i + 1 end
      return i > #s and count > 0
    end
  end
end

local function text_ok(v, kind, max)
  if #v == 0 or #v >= max then return false end
  if kind == "name" then return v:find("^[%w_%.:%+%-]+$") ~= nil end
  return not v:find("[\1-\31\127,]")
end

local function in_range(n, key) return n ~= nil and n >= key[3] and n <= key[4] end

-- key = { name, kind, ... }: the value, or nil when the node refuses it.
local function key_value(key, v)
  local kind = key[2]
  if kind == "uint" then
    local n, i = digits(v, 1)
    if n and i > #v and in_range(n, key) then return n end
  elseif kind == "size" then
    local n = parse_size(v)
    if in_range(n, key) then return n end
  elseif kind == "duration" then
    local n = parse_duration(v)
    if in_range(n, key) then return n end
  elseif kind == "percent" then
    local n = parse_percent(v)
    if in_range(n, key) then return n end
  elseif kind == "enum" then
    for _, c in ipairs(key[3]) do
      if c == v then return v end
    end
  elseif kind == "list" then
    if v ~= "" and list_ok(v, key[4]) then return v end
  elseif text_ok(v, kind, key[3]) then
    return v
  end
  return nil
end

local function format_size(n)
  local u = 0
  while u < 4 and n > 0 and n % 1024 == 0 do n, u = n / 1024, u + 1 end
  return string.format("%.0f", n) .. (u > 0 and ("KMGT"):sub(u, u) or "")
end

local function format_duration(n)
  if n > 0 and n % SEC == 0 then return string.format("%.0fs", n / SEC) end
  if n % MSEC == 0 then return string.format("%.0fms", n / MSEC) end
  return string.format("%.0fus", n)
end

local function format_percent(h)
  if h % 100 == 0 then return string.format("%.0f%%", h / 100) end
  return string.format("%.0f.%02.0f%%", math.floor(h / 100), h % 100)
end

-- What is allowed for one key, in the node's (and the man page's) words.
local function allowed(key)
  local kind = key[2]
  if kind == "uint" then
    return string.format("a whole number from %.0f to %.0f", key[3], key[4])
  elseif kind == "size" then
    return "a size from " .. format_size(key[3]) .. " to " .. format_size(key[4]) .. " (suffix K, M, G or T)"
  elseif kind == "duration" then
    return "a duration from " .. format_duration(key[3]) .. " to " .. format_duration(key[4]) .. " (unit us, ms or s)"
  elseif kind == "percent" then
    return "a percentage from " .. format_percent(key[3]) .. " to " .. format_percent(key[4])
  elseif kind == "enum" then
    return "one of " .. table.concat(key[3], "|")
  elseif kind == "list" then
    return string.format("auto, or a list such as 0:2-3 of numbers below %.0f", key[4])
  elseif kind == "path" then
    return string.format("a path of at most %d characters, without ',' or control characters", key[3] - 1)
  end
  return string.format("a name of at most %d characters from A-Z a-z 0-9 _ . : + -", key[3] - 1)
end

-- A user's value shown safely: printable, bounded.
local function shown(v)
  local out = v:sub(1, 72):gsub("[^\32-\126]", function(c) return string.format("\\x%02x", c:byte()) end)
  return #v > 72 and (out .. "...") or out
end

-- nil when the node accepts VALUE for OPTION ("lwk", "sync-monitor",
-- "contention-aware"; "" or "(null)" is the flag alone: defaults), else
-- the node's message, which names the key and what it allows.
function M.check_value(option, value)
  local grammar = GRAMMARS[option]
  local what = "lwk: --" .. option .. ": "
  if not grammar or value == nil or value == "" or value == "(null)" then return nil end
  if #value >= MAX_ARG then
    return what .. "the value is longer than " .. (MAX_ARG - 1) .. " characters"
  end
  local names = {}
  for _, key in ipairs(grammar) do names[#names + 1] = key[1] end
  names = table.concat(names, ", ")
  local got, seen = {}, {}
  for item in value:gmatch("[^,]+") do
    local eq = item:find("=", 1, true)
    if not eq then
      return what .. "'" .. shown(item) .. "' is not key=value; allowed keys: " .. names
    end
    local name, v = item:sub(1, eq - 1), item:sub(eq + 1)
    local key
    for _, k in ipairs(grammar) do
      if k[1] == name then key = k end
    end
    if not key then
      return what .. "unknown key '" .. shown(name) .. "'; allowed keys: " .. names
    end
    local n = key_value(key, v)
    if n == nil then
      return string.format("%s%s='%s' is not valid; %s must be %s", what, name, shown(v), name, allowed(key))
    end
    if seen[name] then return what .. "key '" .. name .. "' is given twice" end
    seen[name], got[name] = true, n
  end
  if value:sub(1, 1) == "," or value:find(",,", 1, true) or value:sub(-1) == "," then
    return what .. "empty item in '" .. shown(value) .. "'"
  end
  -- What the node checks across keys, with its defaults.
  if option == "lwk" then
    local os_cores, cpu = got.os or 1, got.deleg_cpu or 10000
    if cpu > os_cores * 10000 then
      return string.format("%sdeleg_cpu=%.0f.%02.0f%% is more than the %.0f OS core(s) can give; " ..
        "deleg_cpu must be at most %.0f%% (100%% per OS core, see os=)",
        what, math.floor(cpu / 100), cpu % 100, os_cores, os_cores * 100)
    end
  elseif option == "sync-monitor" then
    local interval, offset = got.interval or 500 * MSEC, got.offset or 0
    if offset >= interval then
      return string.format("%soffset=%s is not below interval=%s; offset must be smaller than the interval",
        what, format_duration(offset), format_duration(interval))
    end
  elseif option == "contention-aware" then
    local lo, hi = got.min_dies or 1, got.max_dies or 0
    if hi ~= 0 and hi < lo then
      return string.format("%smax_dies=%.0f is below min_dies=%.0f; max_dies must be 0 (no limit) or at least min_dies",
        what, hi, lo)
    end
  end
  return nil
end

-- Every value of the plugin's options a submission carries, on every
-- road a node reads (each spank_job_env entry; in a batch job's
-- environment both names), shadowed or not: { {option, value}, ... }.
function M.option_values(job_desc)
  local values = {}
  each_spank_option(job_desc, function(option, value)
    values[#values + 1] = { option, value }
  end)
  if job_desc and job_desc.script ~= nil and job_desc.environment ~= nil then
    for name, option in pairs(M.OPTIONS) do
      for _, var in ipairs(env_names(name)) do
        local value = job_desc.environment[var]
        if value ~= nil then values[#values + 1] = { option, tostring(value) } end
      end
    end
  end
  return values
end

-- One log word list per job that uses the plugin, in option order.
function M.describe(opts)
  local parts = {}
  for _, name in ipairs({ "lwk", "sync-monitor", "contention-aware" }) do
    if opts[name] then
      parts[#parts + 1] = "--" .. name .. (opts[name] ~= "" and ("=" .. opts[name]) or "")
    end
  end
  return table.concat(parts, " ")
end

-- Fields Slurm keeps in 16 bits: their unset values are NO_VAL16 and
-- INFINITE16 (65534/65535); in 32-bit fields those are real numbers.
local FIELD16 = { cpus_per_task = true, ntasks_per_node = true, ntasks_per_socket = true,
                  ntasks_per_core = true,
                  threads_per_core = true, sockets_per_node = true, pn_min_cpus = true,
                  cores_per_socket = true, shared = true }

-- A number field, or nil when unset: nil, not a number, or Slurm's
-- sentinel for the field's width (NO_VAL/INFINITE = 4294967294/5).
local function num(v, field)
  v = tonumber(v)
  if v == nil or v >= M.NO_VAL or (FIELD16[field] and (v == 65534 or v == 65535)) then
    return nil
  end
  return v
end
M.num = num

local function ceil_div(a, b)
  return math.floor((a + b - 1) / b)
end

local function split(s, sep)
  local out = {}
  for piece in string.gmatch(s, "[^" .. sep .. "]+") do
    out[#out + 1] = piece
  end
  return out
end

---------------------------------------------------------------------------
-- The site config (lwk_policy.conf)

local RECORDS = {
  NodeType = { Dies = "count", CoresPerDie = "count", ThreadsPerCore = "count",
               Packages = "count", NumaNodes = "count" },
  Partition = { NodeType = "name", DieGranular = "bool", CoSchedule = "bool",
                OneTaskPerCore = "bool" },
  Feature = { NodeType = "name", OneTaskPerCore = "bool" },
}
local RECORD_ORDER = "NodeType, Partition, Feature"

local function keys_of(t)
  local k = {}
  for name in pairs(t) do k[#k + 1] = name end
  table.sort(k)
  return table.concat(k, ", ")
end

-- Parse the config text.  Returns config, or nil and a message naming
-- the line at fault.
function M.parse_config(text, source)
  source = source or M.CONFIG_NAME
  local cfg = { node_types = {}, partitions = {}, features = {}, cosched = {} }
  local lineno = 0
  local function bad(fmt, ...)
    return nil, string.format("%s line %d: " .. fmt, source, lineno, ...)
  end
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    line = line:gsub("#.*", ""):gsub("^%s+", ""):gsub("%s+$", "")
    if line ~= "" then
      local words = split(line, "%s")
      local kind, name = words[1]:match("^([%a]+)=(.*)$")
      if not kind or not RECORDS[kind] then
        return bad("'%s' does not start a record; a line starts with one of %s=NAME",
                   words[1], RECORD_ORDER)
      end
      if not name:match("^[%w_.%-]+$") then
        return bad("%s='%s' is not a name (letters, digits, _ . -)", kind, name)
      end
      local rec = { name = name, line = lineno }
      for i = 2, #words do
        local k, v = words[i]:match("^([%a]+)=(.*)$")
        local kind_of = k and RECORDS[kind][k]
        if not kind_of then
          return bad("unknown key '%s' in a %s line; allowed keys: %s",
                     k or words[i], kind, keys_of(RECORDS[kind]))
        end
        if rec[k] ~= nil then
          return bad("key '%s' is given twice", k)
        end
        if kind_of == "count" then
          if not v:match("^%d+$") or tonumber(v) < 1 or tonumber(v) > 65535 then
            return bad("%s='%s' is not valid; %s must be a whole number from 1 to 65535", k, v, k)
          end
          rec[k] = tonumber(v)
        elseif kind_of == "bool" then
          if v == "yes" then rec[k] = true
          elseif v == "no" then rec[k] = false
          else return bad("%s='%s' is not valid; %s must be yes or no", k, v, k) end
        else
          rec[k] = v
        end
      end
      local set = kind == "NodeType" and cfg.node_types
               or kind == "Partition" and cfg.partitions or cfg.features
      if set[name] then
        return bad("%s=%s is defined twice (first on line %d)", kind, name, set[name].line)
      end
      if kind == "NodeType" then
        if not rec.Dies or not rec.CoresPerDie then
          return bad("NodeType=%s needs Dies= and CoresPerDie= (lwk-topology --format conf prints them)", name)
        end
        rec.ThreadsPerCore = rec.ThreadsPerCore or 1
        rec.die_cpus = rec.CoresPerDie * rec.ThreadsPerCore
        rec.node_cpus = rec.Dies * rec.die_cpus
      else
        if not rec.NodeType then
          return bad("%s=%s needs NodeType=", kind, name)
        end
        if kind == "Partition" then
          if rec.DieGranular == nil then rec.DieGranular = true end
          rec.CoSchedule = rec.CoSchedule or false
        end
      end
      set[name] = rec
      if kind == "Partition" and rec.CoSchedule then
        cfg.cosched[#cfg.cosched + 1] = name
      end
    end
  end
  -- References are checked once every NodeType is known.
  for _, set in ipairs({ cfg.partitions, cfg.features }) do
    for name, rec in pairs(set) do
      if not cfg.node_types[rec.NodeType] then
        lineno = rec.line
        return bad("NodeType=%s is not defined (defined: %s)", rec.NodeType,
                   next(cfg.node_types) and keys_of(cfg.node_types) or "none")
      end
    end
  end
  return cfg
end

---------------------------------------------------------------------------
-- The rules.  plan() is pure: it reads a job and returns what to change
-- or why to refuse, so every rule is tested without slurmctld.

local function refuse(rule, fmt, ...)
  return { reject = string.format("lwk: " .. rule .. ": " .. fmt, ...) }
end

local function default_partition(part_list)
  if type(part_list) ~= "table" then return nil end
  for name, part in pairs(part_list) do
    if tonumber(part.flag_default) == 1 then return name end
  end
  return nil
end

-- The features a job asks for, as a set of words.
local function feature_words(features)
  local set = {}
  if type(features) == "string" then
    for w in features:gmatch("[%w_.%-]+") do set[w] = true end
  end
  return set
end

-- The NodeType that governs a job's placement, a refusal, the name of
-- the partition (or feature) it came from and that record.  nil when
-- the policy does not apply.
local function governing(cfg, partitions, job_desc)
  local governed, plain = {}, {}
  for _, p in ipairs(partitions) do
    local rec = cfg.partitions[p]
    if rec and rec.DieGranular then governed[#governed + 1] = rec else plain[#plain + 1] = p end
  end
  if #governed > 0 and #plain > 0 then
    return nil, refuse("die placement",
      "partition %s places jobs by whole dies and %s does not; request them separately",
      governed[1].name, plain[1])
  end
  for i = 2, #governed do
    if governed[i].NodeType ~= governed[1].NodeType then
      return nil, refuse("die placement",
        "partitions %s and %s have different dies (NodeType %s and %s); request one of them",
        governed[1].name, governed[i].name, governed[1].NodeType, governed[i].NodeType)
    end
  end
  if #governed > 0 then
    return cfg.node_types[governed[1].NodeType], nil, governed[1].name, governed[1]
  end
  local words = feature_words(job_desc.features)
  local names = {}
  for fname in pairs(cfg.features) do names[#names + 1] = fname end
  table.sort(names)
  for _, fname in ipairs(names) do
    if words[fname] then
      return cfg.node_types[cfg.features[fname].NodeType], nil, "feature " .. fname, cfg.features[fname]
    end
  end
  return nil
end

-- What a job needs, and the change that puts it on whole dies.
--
-- How cons_tres places a job under CR_Socket (dies as sockets), in
-- _cyclic_sync_core_bitmap (dist_tasks.c; the default distribution; the
-- same in Slurm 22.05, 24.11 and 26.05): it counts the CPUs of the
-- job's tasks on a node (whole tasks: its CPU minimum divided by
-- --cpus-per-task), then
--  * with --ntasks-per-socket, caps each socket at that many tasks'
--    CPUs and keeps the fewest sockets that hold them, taking a core of
--    each kept socket in turn;
--  * without it, packs each task on one socket only if the task fits in
--    one, and otherwise takes one core of every socket in turn: a
--    one-task -c 9 on 8-CPU dies of 2-thread cores takes 5 cores from 5
--    sockets, and CR_Socket charges the job 5 whole dies (40 CPUs).
-- So --ntasks-per-socket is always set (the tasks that fit in a die, or
-- 1 for a task wider than a die), and the CPU minimum is the CPUs of the
-- tasks the rounded dies hold: rounding it further would add tasks that
-- need one more die.
-- A task wider than a die gets whole dies of its own: its
-- --cpus-per-task is rounded up to whole dies.  A CPU minimum alone
-- cannot reach them: from 23.02.5 (and in 22.05 up to 22.05.6) cons_tres
-- gives a job on a node no more CPUs than its whole tasks fill
-- (_allocate_sc: a one-task -c 5 on a node of 8 CPUs gets 5, and a
-- minimum of 6, the 3 dies of 2 CPUs it spans, is "Requested node
-- configuration is not available"; seen on 26.05).  The job and its
-- steps then see the rounded count (SLURM_CPUS_PER_TASK, 22.05 and
-- 26.05 alike).
-- With --threads-per-core=1 on nodes of 2 threads a core, a job uses one
-- CPU of each core (Slurm counts its CPU request in those) but holds
-- whole cores: a die then gives it CoresPerDie CPUs and costs die_cpus.
-- --ntasks-per-core=N (or CR_ONE_TASK_PER_CORE, which makes it 1 when
-- not given) limits the CPUs a task uses on a core to
-- N x --cpus-per-task, and the job holds whole cores the same way.
local POSITIVE = { { "cpus_per_task", "--cpus-per-task" }, { "ntasks_per_socket", "--ntasks-per-socket" },
                   { "ntasks_per_core", "--ntasks-per-core" }, { "threads_per_core", "--threads-per-core" } }

local function round_to_dies(nt, where, job_desc, set, notes, rule_rec)
  -- Zero through the API would divide by zero below.
  for _, f in ipairs(POSITIVE) do
    local v = num(job_desc[f[1]], f[1])
    if v and v < 1 then
      return refuse("die placement", "%s=%s is not valid; it must be a whole number of at least 1", f[2], tostring(v))
    end
  end
  local dc = nt.die_cpus
  local per_task = num(job_desc.cpus_per_task, "cpus_per_task") or 1
  local tasks = num(job_desc.num_tasks, "num_tasks")
  local per_node_tasks = num(job_desc.ntasks_per_node, "ntasks_per_node")
  local min_cpus = num(job_desc.min_cpus, "min_cpus")
  local pn_min = num(job_desc.pn_min_cpus, "pn_min_cpus")
  local tpc = num(job_desc.threads_per_core, "threads_per_core")
  local spn = num(job_desc.sockets_per_node, "sockets_per_node")
  local max_nodes = num(job_desc.max_nodes, "max_nodes")
  local npc = num(job_desc.ntasks_per_core, "ntasks_per_core")
  local npc_from = npc and string.format("--ntasks-per-core=%d", npc)
  if not npc and rule_rec and rule_rec.OneTaskPerCore then
    npc, npc_from = 1, "OneTaskPerCore=yes"
  end

  if tpc and tpc > nt.ThreadsPerCore then
    return refuse("die placement",
      "--threads-per-core=%d cannot fit: nodes of %s have %d thread(s) per core; nearest valid: --threads-per-core=%d",
      tpc, where, nt.ThreadsPerCore, nt.ThreadsPerCore)
  end
  if spn and spn > nt.Dies then
    return refuse("die placement",
      "--sockets-per-node=%d asks for more dies than a node of %s has (%d); nearest valid: --sockets-per-node=%d",
      spn, where, nt.Dies, nt.Dies)
  end
  -- CPUs a die gives the job (du) and a node (nu), in Slurm's count.
  local per_core = math.min(tpc or nt.ThreadsPerCore, nt.ThreadsPerCore,
                            npc and npc * per_task or nt.ThreadsPerCore)
  local du = nt.CoresPerDie * per_core
  local nu = nt.Dies * du
  local shape = (du == dc) and string.format("%d dies x %d CPUs", nt.Dies, dc)
             or (tpc and tpc == per_core) and string.format("%d dies x %d CPUs at --threads-per-core=%d", nt.Dies, du, tpc)
             or string.format("%d dies x %d CPUs at %s", nt.Dies, du, npc_from)
  if per_task > nu then
    return refuse("die placement",
      "--cpus-per-task=%d is more than a node of %s has (%s); nearest valid: --cpus-per-task=%d",
      per_task, where, shape, nu)
  end
  -- A task wider than a die: whole dies of its own (above).
  local asked_task = per_task
  if per_task > du and per_task % du ~= 0 then
    per_task = ceil_div(per_task, du) * du
    set.cpus_per_task = per_task
    notes[#notes + 1] = string.format("CPUs per task %d -> %d (%d whole dies)", asked_task, per_task, ceil_div(asked_task, du))
  end
  -- Tasks per die: as many as fit, never more; a wider task gets 1, so
  -- that Slurm keeps it on the fewest dies.
  local fit = math.floor(du / per_task)
  local per_socket = num(job_desc.ntasks_per_socket, "ntasks_per_socket")
  if per_socket and fit >= 1 and per_socket > fit then
    return refuse("die placement",
      "--ntasks-per-socket=%d does not fit: a die of %s has %d CPUs, room for %d task(s) of %d CPU(s); nearest valid: --ntasks-per-socket=%d",
      per_socket, where, du, fit, per_task, fit)
  end
  if not per_socket then
    per_socket = math.max(fit, 1)
    set.ntasks_per_socket = per_socket
  end
  local pack = math.min(per_socket, math.max(fit, 1))
  -- The dies n tasks (or, for tasks wider than a die, cpus CPUs in whole
  -- tasks of `wide` dies each) take, and the CPU minimum that keeps them
  -- there: whole tasks, so that Slurm can give it (above) and a rounded
  -- minimum rounds to itself.
  local wide = fit >= 1 and 1 or math.floor(per_task / du)
  local function dies_for(n, cpus)
    if fit >= 1 then return ceil_div(n, pack) end
    return ceil_div(cpus, per_task) * wide
  end
  local function cpus_for(d)
    if fit >= 1 then return d * pack * per_task end
    return d * du
  end
  -- What a refusal says when the tasks were rounded.
  local rounded = per_task ~= asked_task and
    string.format(" (each task's %d CPUs rounded up to %d: a task wider than a die gets whole dies)", asked_task, per_task) or ""
  -- Per node: tasks per node, or the per-node minimum in whole tasks.
  local node_tasks = math.max(per_node_tasks or 0, pn_min and ceil_div(pn_min, per_task) or 0)
  if node_tasks > 0 then
    local d = dies_for(node_tasks, math.max(pn_min or 0, (per_node_tasks or 0) * per_task))
    if d > nt.Dies then
      return refuse("die placement",
        "%d CPUs per node%s is more than a node of %s has (%s); nearest valid: --ntasks-per-node=%d",
        node_tasks * per_task, rounded, where, shape, math.max(1, fit >= 1 and nt.Dies * pack or math.floor(nu / per_task)))
    end
    local want = cpus_for(d)
    -- Unless Slurm's own count per node (its minimum, or the node's
    -- tasks' CPUs) is already that.
    if want ~= pn_min and want > math.max(pn_min or 0, (per_node_tasks or 0) * per_task) then
      set.pn_min_cpus = want
      notes[#notes + 1] = string.format("CPUs per node %d -> %d (%d die(s))", math.max(pn_min or 0, node_tasks * per_task), want, d)
    end
  end
  -- In all: tasks x CPUs per task, or the CPU minimum in whole tasks.
  local all_tasks = math.max(tasks or 1, min_cpus and ceil_div(min_cpus, per_task) or 0, 1)
  local all_cpus = math.max(min_cpus or 0, (tasks or 1) * per_task)
  local d = dies_for(all_tasks, all_cpus)
  if max_nodes and max_nodes >= 1 and d > max_nodes * nt.Dies then
    return refuse("die placement",
      "%d CPUs%s on at most %d node(s) is more than %s per node of %s; nearest valid: --nodes=%d, or --ntasks=%d",
      fit >= 1 and all_tasks * per_task or ceil_div(all_cpus, per_task) * per_task, rounded, max_nodes, shape, where, ceil_div(d, nt.Dies),
      math.max(1, fit >= 1 and max_nodes * nt.Dies * pack or math.floor(max_nodes * nu / per_task)))
  end
  local want = cpus_for(d)
  local had = math.max(min_cpus or 0, (tasks or 1) * asked_task)
  if want ~= had then
    set.min_cpus = want
    notes[#notes + 1] = string.format("CPUs %d -> %d (%d die(s))", had, want, d)
  end
  return nil
end

-- plan(job_desc, opts, cfg, part_list, cfg_error, no_rounding) ->
--   { set = {field = value}, reject = "message", notes = {...}, applies = bool,
--     dies = NodeType governing the job, where = its partition or feature }
-- no_rounding: judge the options and the partitions only.
function M.plan(job_desc, opts, cfg, part_list, cfg_error, no_rounding)
  local uses = next(opts) ~= nil
  local result = { set = {}, notes = {}, applies = uses }
  if not cfg then
    if uses then
      return { reject = "lwk: site policy: " .. M.CONFIG_NAME ..
                        " is missing or invalid (" .. tostring(cfg_error) ..
                        "); jobs using slurm-lwk options are refused until it is fixed; contact your administrator",
               applies = true }
    end
    return result
  end

  local requested = job_desc.partition
  local partitions = requested and split(requested, ",") or {}
  local explicit = #partitions > 0
  if not explicit then
    local def = default_partition(part_list)
    if def then partitions = { def } end
  end

  if opts["contention-aware"] then
    if #cfg.cosched == 0 then
      return refuse("--contention-aware", "no co-scheduling partition is configured on this cluster; contact your administrator")
    end
    -- Every partition the job may run in must co-schedule: in a list,
    -- Slurm may start it in any of them.
    local ok = #partitions > 0
    for _, p in ipairs(partitions) do
      if not (cfg.partitions[p] and cfg.partitions[p].CoSchedule) then ok = false end
    end
    if not ok then
      if explicit then
        return refuse("--contention-aware",
          "partition %s does not co-schedule jobs by dies; use --partition=%s",
          requested, table.concat(cfg.cosched, " or --partition="))
      end
      result.set.partition = cfg.cosched[1]
      partitions = { cfg.cosched[1] }
      result.notes[#result.notes + 1] = "partition -> " .. cfg.cosched[1]
    end
  end

  if opts["lwk"] then
    for _, p in ipairs(partitions) do
      if cfg.partitions[p] and cfg.partitions[p].CoSchedule then
        local others = {}
        for name, rec in pairs(cfg.partitions) do
          if not rec.CoSchedule then others[#others + 1] = name end
        end
        table.sort(others)
        return refuse("--lwk",
          "partition %s shares nodes between jobs, --lwk needs whole nodes; %s",
          p, #others > 0 and ("use --partition=" .. table.concat(others, " or --partition="))
                          or "use a partition that is not co-scheduled")
      end
    end
    if num(job_desc.shared, "shared") ~= 0 then
      result.set.shared = 0 -- exclusive: whole nodes
      result.notes[#result.notes + 1] = "whole nodes"
    end
  end

  local nt, why, where, rule_rec = governing(cfg, partitions, job_desc)
  if why then return why end
  if nt then
    result.applies, result.dies, result.where = true, nt, where
    if not no_rounding then
      local r = round_to_dies(nt, where, job_desc, result.set, result.notes, rule_rec)
      if r then return r end
    end
  end
  return result
end

---------------------------------------------------------------------------
-- Glue: read the config, apply plans, log.

local function dir_of(source)
  if source and source:sub(1, 1) == "@" then
    return source:sub(2):match("^(.*)/[^/]*$") or "."
  end
end

-- Where lwk_policy.conf is: next to the script that loaded this module
-- (the site's job_submit.lua, which slurmctld reads next to slurm.conf),
-- wherever the module itself is installed; next to the module when it
-- is the script slurmctld runs.  Asked once, while the module loads.
local function config_dir()
  local own = debug.getinfo(1, "S").source
  for level = 2, 8 do
    local info = debug.getinfo(level, "S")
    if not info then break end
    if info.source ~= own and dir_of(info.source) then
      return dir_of(info.source)
    end
  end
  return dir_of(own) or "."
end
M.config_dir = config_dir()

-- The config's text, or nil and why not.  Replaced in tests.
function M.read_config_text(path)
  local f, err = io.open(path, "r")
  if not f then
    return nil, "cannot read " .. path .. ": " .. tostring(err)
  end
  local text = f:read("*a")
  f:close()
  return text
end

-- The config is read at every call (a few microseconds for a small file)
-- and parsed again only when its text changed, so an edit applies to the
-- next submission: slurmctld reloads this script only when the script
-- itself changes.  Each new error is logged once.
local cache = {}

function M.config()
  local path = M.config_path or (M.config_dir .. "/" .. M.CONFIG_NAME)
  local text, err = M.read_config_text(path)
  local key = text or ("\0" .. tostring(err))
  if key ~= cache.key then
    cache.key = key
    if text then
      cache.cfg, cache.err = M.parse_config(text, path)
    else
      cache.cfg, cache.err = nil, err
    end
    if not cache.cfg then
      slurm.log_error("lwk: job_submit.lua: %s; jobs using slurm-lwk options are refused until it is fixed",
                      tostring(cache.err))
    end
  end
  return cache.cfg, cache.err
end

local function apply(job_desc, part_list, uid, what)
  for _, v in ipairs(M.option_values(job_desc)) do
    local why = M.check_value(v[1], v[2])
    if why then
      slurm.log_user("%s", why)
      slurm.log_info("lwk: %s: uid %s name %s refused: %s", what, tostring(uid),
                     tostring(job_desc.name), why)
      return slurm.ERROR
    end
  end
  local opts, env_only = M.options_split(job_desc)
  local cfg, cfg_error = M.config()
  local p = M.plan(job_desc, opts, cfg, part_list, cfg_error)
  if p.reject then
    slurm.log_user("%s", p.reject)
    slurm.log_info("lwk: %s: uid %s name %s refused: %s", what, tostring(uid),
                   tostring(job_desc.name), p.reject)
    return slurm.ERROR
  end
  for field, value in pairs(p.set or {}) do
    job_desc[field] = value
  end
  if next(env_only) ~= nil then
    -- Kept where scontrol update can see it (slurm_job_modify).
    local old = job_desc.admin_comment
    local mark = M.mark(env_only)
    job_desc.admin_comment = (old and old ~= "") and (old .. "; " .. mark) or mark
    p.notes[#p.notes + 1] = "from the environment: " .. M.describe(env_only)
  end
  if next(opts) ~= nil or #p.notes > 0 then
    local notes = #p.notes > 0 and (" [" .. table.concat(p.notes, "; ") .. "]") or ""
    local described = M.describe(opts)
    slurm.log_info("lwk: %s: uid %s name %s:%s%s", what, tostring(uid), tostring(job_desc.name),
                   described ~= "" and (" " .. described) or "", notes)
  end
  return slurm.SUCCESS
end

-- Would this job be touched by the policy?  Used only after an internal
-- error, so it must not fail itself: when in doubt, it is in scope.
-- Decided as plan() decides: explicit or default partition, or a feature.
local function in_scope(job_desc, part_list)
  local ok, opts = pcall(M.options, job_desc)
  if not ok or next(opts) ~= nil then return true end
  local cfg = cache.cfg
  if not cfg then return false end
  local ok2, inside = pcall(function()
    local partitions = job_desc.partition and split(job_desc.partition, ",") or {}
    if #partitions == 0 then
      local def = default_partition(part_list)
      if def then partitions = { def } end
    end
    local nt, why = governing(cfg, partitions, job_desc)
    return nt ~= nil or why ~= nil
  end)
  return (not ok2) or inside
end

-- Run f; an internal error fails only jobs in the policy's scope.
function M.guard(f, job_desc, part_list, ...)
  local ok, rc = pcall(f, job_desc, part_list, ...)
  if ok then
    return rc
  end
  slurm.log_error("lwk: job_submit.lua internal error: %s", tostring(rc))
  if in_scope(job_desc, part_list) then
    slurm.log_user("lwk: the site's job_submit.lua policy failed on this job (%s); " ..
                   "the job was not submitted, contact your administrator", tostring(rc))
    return slurm.ERROR
  end
  return slurm.SUCCESS
end

-- What the site's slurm_job_submit calls first: slurm.SUCCESS, or
-- slurm.ERROR with the reason already given to the user.
function M.job_submit(job_desc, part_list, submit_uid)
  return M.guard(apply, job_desc, part_list, submit_uid, "job_submit")
end

-- scontrol update of a pending job: job_desc holds only what changes;
-- the rest (partition, options) comes from the job record.  The job's
-- own options are judged too, so a partition change cannot move a
-- --lwk job into a co-scheduling partition, nor a --contention-aware
-- job out of one.
--
-- The record Lua sees (src/lua/slurm_lua.c, 22.05 to 26.05) has no
-- cpus_per_task, num_tasks, ntasks_per_socket, ntasks_per_node,
-- threads_per_core or shared, so the job's tasks cannot be re-counted
-- from it; and Slurm lets only operators change ntasks_per_socket, so
-- an update never sets it.  Hence, for a job placed by dies: a move
-- between partitions of the same NodeType keeps the shape given at
-- submission; a new CPU count, or a move onto other dies (or into the
-- policy), is rounded only when the update itself gives
-- --cpus-per-task, and refused otherwise.
local CPU_FIELDS = { "min_cpus", "num_tasks", "cpus_per_task", "pn_min_cpus", "ntasks_per_node" }

function M.job_modify(job_desc, job_rec, part_list, modify_uid)
  return M.guard(function(jd, parts)
    local cpu_change = false
    for _, f in ipairs(CPU_FIELDS) do
      if num(jd[f], f) then cpu_change = true end
    end
    if not (cpu_change or jd.partition or jd.features) then
      return slurm.SUCCESS
    end
    local function refused(msg)
      slurm.log_user("%s", msg)
      slurm.log_info("lwk: job_modify: uid %s job %s refused: %s", tostring(modify_uid),
                     tostring(job_rec and job_rec.job_id), msg)
      return slurm.ERROR
    end
    local view = setmetatable({}, { __index = function(_, k)
      local v = jd[k]
      if v == nil or (type(v) == "number" and num(v, k) == nil) then
        v = job_rec and job_rec[k]
      end
      return v
    end })
    local opts = M.record_options(job_rec)
    local cfg, cfg_error = M.config()
    local p = M.plan(view, opts, cfg, parts, cfg_error, true)
    if p.reject then return refused(p.reject) end
    if not p.dies then return slurm.SUCCESS end
    if not num(jd.cpus_per_task, "cpus_per_task") then
      local before = M.plan(job_rec or {}, {}, cfg, parts, cfg_error, true).dies
      if cpu_change or before ~= p.dies then
        return refused(string.format(
          "lwk: die placement: %s places jobs by whole dies, and an update cannot re-count a job's tasks " ..
          "(Slurm does not show this policy the job's --cpus-per-task); cancel the job and submit it again " ..
          "with the new request, or give CPUsPerTask= in the same update", p.where))
      end
      return slurm.SUCCESS
    end
    p = M.plan(view, opts, cfg, parts, cfg_error)
    if p.reject then return refused(p.reject) end
    for field, value in pairs(p.set or {}) do
      -- A partition the job did not ask for is only chosen at submission;
      -- ntasks_per_socket is the operators' (ESLURM_ACCESS_DENIED).
      if field ~= "shared" and field ~= "partition" and field ~= "ntasks_per_socket" then
        jd[field] = value
      end
    end
    if #p.notes > 0 then
      slurm.log_info("lwk: job_modify: uid %s: [%s]", tostring(modify_uid), table.concat(p.notes, "; "))
    end
    return slurm.SUCCESS
  end, job_desc, part_list)
end

return M
