-- SPDX-License-Identifier: GPL-2.0-or-later
-- busted spec for lua/job_submit.lua, run under lua5.1 and lua5.3.
local srcdir = os.getenv("srcdir") or "."
package.path = srcdir .. "/testsuite/lua/?.lua;" .. package.path
local fake = require("fake_slurm")

local function load_policy()
  fake.install()
  return dofile(srcdir .. "/lua/job_submit.lua")
end

describe("spank_job_env", function()
  local M
  before_each(function() M = load_policy() end)

  it("reads entry 0, which ipairs would skip", function()
    local opts = M.options(fake.job({ "_SLURM_SPANK_OPTION_lwk_lwk=os=2" }))
    assert.are.equal("os=2", opts["lwk"])
  end)

  it("maps (null) to an option given without a value", function()
    local opts = M.options(fake.job({ "_SLURM_SPANK_OPTION_lwk_lwk=os=1",
                                      "_SLURM_SPANK_OPTION_lwk_sync_monitor=(null)" }))
    assert.are.equal("", opts["sync-monitor"])
    assert.are.equal("os=1", opts["lwk"])
  end)

  it("ignores other plugins' options and unknown names", function()
    local opts = M.options(fake.job({ "_SLURM_SPANK_OPTION_pyxis_image=x",
                                      "_SLURM_SPANK_OPTION_lwk_bogus=1", "PATH=/bin" }))
    assert.is_nil(next(opts))
  end)

  it("keeps values that contain '='", function()
    local opts = M.options(fake.job({ "_SLURM_SPANK_OPTION_lwk_contention_aware=probe=1s,objective=stp" }))
    assert.are.equal("probe=1s,objective=stp", opts["contention-aware"])
  end)

  it("copes with no env, a nil size and holes", function()
    assert.is_nil(next(M.options({})))
    assert.is_nil(next(M.options(nil)))
    local job = { spank_job_env = { [0] = "_SLURM_SPANK_OPTION_lwk_lwk=(null)" } }
    assert.are.equal("", M.options(job)["lwk"])
    job = { spank_job_env = { [1] = "_SLURM_SPANK_OPTION_lwk_lwk=os=3" }, spank_job_env_size = 2 }
    assert.are.equal("os=3", M.options(job)["lwk"])
  end)
end)

describe("slurm_job_submit", function()
  before_each(function() load_policy() end)

  it("passes jobs without the plugin's options untouched and silently", function()
    local job = fake.job({}, { min_cpus = 3 })
    assert.are.equal(slurm.SUCCESS, slurm_job_submit(job, {}, 1000))
    assert.are.equal(3, job.min_cpus)
    assert.are.equal(0, #fake.logs)
  end)

  it("logs the options of a plugin job", function()
    local job = fake.job({ "_SLURM_SPANK_OPTION_lwk_lwk=os=2",
                           "_SLURM_SPANK_OPTION_lwk_sync_monitor=(null)" })
    assert.are.equal(slurm.SUCCESS, slurm_job_submit(job, {}, 1000))
    assert.are.equal("lwk: job_submit: uid 1000 name t: --lwk=os=2 --sync-monitor", fake.logs[1])
  end)
end)

describe("internal errors", function()
  local M
  before_each(function() M = load_policy() end)

  local function boom() error("synthetic failure") end

  it("reject a job that asked for the plugin, telling the user", function()
    local job = fake.job({ "_SLURM_SPANK_OPTION_lwk_lwk=(null)" })
    assert.are.equal(slurm.ERROR, M.guard(boom, job))
    assert.truthy(fake.user[1]:find("^lwk: the site's job_submit.lua policy failed"))
  end)

  it("never block a job that did not", function()
    assert.are.equal(slurm.SUCCESS, M.guard(boom, fake.job({ "FOO=bar" })))
    assert.are.equal(0, #fake.user)
    assert.truthy(fake.logs[1]:find("internal error"))
  end)
end)
