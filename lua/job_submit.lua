-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- job_submit.lua with slurm-lwk's policy: what a site puts next to
-- slurm.conf (JobSubmitPlugins=lua).  A site that has its own script adds
-- the dofile line and the two calls to it; lwk_policy.conf goes next to
-- the script (lwk_policy.conf(5)).  slurmctld reloads this script when
-- it changes, not when the module does: touch it after an upgrade.

local lwk = dofile("/usr/share/slurm-lwk/lwk_policy.lua")

function slurm_job_submit(job_desc, part_list, submit_uid)
  local rc = lwk.job_submit(job_desc, part_list, submit_uid)
  if rc ~= slurm.SUCCESS then return rc end
  -- The site's own rules here.
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  local rc = lwk.job_modify(job_desc, job_rec, part_list, modify_uid)
  if rc ~= slurm.SUCCESS then return rc end
  -- The site's own rules here.
  return slurm.SUCCESS
end
