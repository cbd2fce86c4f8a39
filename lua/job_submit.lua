-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- slurm-lwk job_submit.lua: the controller side of the lwk SPANK plugin.
--
-- slurmctld on Debian 12 embeds Lua 5.1; this script runs on 5.1 to 5.4
-- (no integer division operator, no bit operators, unpack guarded).
--
-- The plugin's options reach this script in job_desc.spank_job_env, a
-- table indexed from 0 (ipairs would skip entry 0), as
--   _SLURM_SPANK_OPTION_lwk_<option>=<value>
-- with '-' in the option name written '_' and "(null)" for a flag given
-- without a value.  The options were already validated by sbatch/srun;
-- this script records them, and it is where the die-granular placement
-- policy lives.
--
-- Safety rule: an internal error rejects only jobs that asked for the
-- plugin's options; every other job passes untouched.

local M = {}

M.PREFIX = "_SLURM_SPANK_OPTION_lwk_"
M.OPTIONS = { lwk = "lwk", sync_monitor = "sync-monitor",
              contention_aware = "contention-aware" }

-- The plugin's options of a job: { ["lwk"] = "os=2", ["sync-monitor"] = "" }.
-- An option given without a value maps to "".
function M.options(job_desc)
  local env = job_desc and job_desc.spank_job_env
  local found = {}
  if type(env) ~= "table" then
    return found
  end
  local size = tonumber(job_desc.spank_job_env_size)
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
        local value = eq and rest:sub(eq + 1) or ""
        if value == "(null)" then value = "" end
        if M.OPTIONS[name] then
          found[M.OPTIONS[name]] = value
        end
      end
      i = i + 1
    end
    if i > 4096 then break end -- a corrupt size never loops for long
  end
  return found
end

-- One log line per job that uses the plugin, in option order.
function M.describe(opts)
  local parts = {}
  for _, name in ipairs({ "lwk", "sync-monitor", "contention-aware" }) do
    if opts[name] then
      parts[#parts + 1] = "--" .. name .. (opts[name] ~= "" and ("=" .. opts[name]) or "")
    end
  end
  return table.concat(parts, " ")
end

local function uses_plugin(job_desc)
  local ok, opts = pcall(M.options, job_desc)
  return (not ok) or next(opts) ~= nil
end

local function submit(job_desc, part_list, submit_uid)
  local opts = M.options(job_desc)
  if next(opts) == nil then
    return slurm.SUCCESS
  end
  slurm.log_info("lwk: job_submit: uid %s name %s: %s", tostring(submit_uid),
                 tostring(job_desc.name), M.describe(opts))
  return slurm.SUCCESS
end

-- Run f; an internal error fails only the plugin's jobs, with a message.
function M.guard(f, job_desc, ...)
  local ok, rc = pcall(f, job_desc, ...)
  if ok then
    return rc
  end
  slurm.log_error("lwk: job_submit.lua internal error: %s", tostring(rc))
  if uses_plugin(job_desc) then
    slurm.log_user("lwk: the site's job_submit.lua policy failed on this job (%s); " ..
                   "the job was not submitted, contact your administrator", tostring(rc))
    return slurm.ERROR
  end
  return slurm.SUCCESS
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  return M.guard(submit, job_desc, part_list, submit_uid)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

return M
