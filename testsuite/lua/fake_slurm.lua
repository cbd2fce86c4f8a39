-- SPDX-License-Identifier: GPL-2.0-or-later
-- A stand-in for the `slurm` table slurmctld gives job_submit.lua:
-- the constants it uses and log functions that record what was said.
local fake = { logs = {}, user = {} }

function fake.install()
  fake.logs, fake.user = {}, {}
  _G.slurm = {
    SUCCESS = 0, ERROR = -1,
    NO_VAL = 4294967294, NO_VAL16 = 65534,
    log_info = function(fmt, ...) fake.logs[#fake.logs + 1] = string.format(fmt, ...) end,
    log_error = function(fmt, ...) fake.logs[#fake.logs + 1] = "error: " .. string.format(fmt, ...) end,
    log_user = function(fmt, ...) fake.user[#fake.user + 1] = string.format(fmt, ...) end,
  }
end

-- A job_desc as slurmctld builds it: spank_job_env indexed from 0.
function fake.job(entries, extra)
  local env = {}
  for i, e in ipairs(entries or {}) do env[i - 1] = e end
  local job = { name = "t", spank_job_env = env, spank_job_env_size = #(entries or {}) }
  for k, v in pairs(extra or {}) do job[k] = v end
  return job
end

return fake
