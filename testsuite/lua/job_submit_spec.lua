-- SPDX-License-Identifier: GPL-2.0-or-later
-- busted spec for lua/lwk_policy.lua and the job_submit.lua that loads
-- it, run under lua5.1 and lua5.3.
local srcdir = os.getenv("srcdir") or "."
package.path = srcdir .. "/testsuite/lua/?.lua;" .. package.path
local fake = require("fake_slurm")

local NO_VAL, NO_VAL16 = 4294967294, 65534

local SITE = [[
# two machines from the papers
NodeType=opteron Packages=4 Dies=8 CoresPerDie=6 ThreadsPerCore=1 NumaNodes=8
NodeType=xeon Dies=2 CoresPerDie=18 ThreadsPerCore=2   # hyperthreads: 36 CPUs a die
Partition=batch NodeType=opteron
Partition=cosched NodeType=opteron CoSchedule=yes
Partition=xeon NodeType=xeon
Partition=plain NodeType=opteron DieGranular=no
Feature=dies NodeType=opteron
# 2 sockets x 8 L3 dies x 4 cores x 2 threads, each die a Slurm socket
NodeType=epyc Packages=2 Dies=16 CoresPerDie=4 ThreadsPerCore=2 NumaNodes=2
Partition=epyc NodeType=epyc
]]

local function load_policy(config_text)
  fake.install()
  local M = dofile(srcdir .. "/lua/lwk_policy.lua")
  -- What the site's job_submit.lua calls.
  _G.slurm_job_submit, _G.slurm_job_modify = M.job_submit, M.job_modify
  M.site_text = config_text
  M.read_config_text = function()
    if M.site_text then return M.site_text end
    return nil, "cannot read lwk_policy.conf: No such file or directory"
  end
  M.cfg, M.cfg_error = M.config()
  fake.logs = {}
  return M
end

local PARTS = { debug = { flag_default = 1 }, batch = { flag_default = 0 },
                cosched = { flag_default = 0 }, xeon = { flag_default = 0 },
                plain = { flag_default = 0 }, epyc = { flag_default = 0 } }

local function plan_for(M, extra, entries)
  local job = fake.job(entries or {}, extra)
  return M.plan(job, M.options(job), M.cfg, PARTS, M.cfg_error)
end

local function opt(name, value)
  return "_SLURM_SPANK_OPTION_lwk_" .. name .. "=" .. (value or "(null)")
end

describe("spank_job_env", function()
  local M
  before_each(function() M = load_policy(SITE) end)

  it("reads entry 0, which ipairs would skip", function()
    local opts = M.options(fake.job({ opt("lwk", "os=2") }))
    assert.are.equal("os=2", opts["lwk"])
  end)

  it("maps (null) to an option given without a value", function()
    local opts = M.options(fake.job({ opt("lwk", "os=1"), opt("sync_monitor") }))
    assert.are.equal("", opts["sync-monitor"])
    assert.are.equal("os=1", opts["lwk"])
  end)

  it("ignores other plugins' options and unknown names", function()
    local opts = M.options(fake.job({ "_SLURM_SPANK_OPTION_pyxis_image=x",
                                      opt("bogus", "1"), "PATH=/bin" }))
    assert.is_nil(next(opts))
  end)

  it("keeps values that contain '='", function()
    local opts = M.options(fake.job({ opt("contention_aware", "probe=1s,objective=stp") }))
    assert.are.equal("probe=1s,objective=stp", opts["contention-aware"])
  end)

  it("copes with no env, a nil size and holes", function()
    assert.is_nil(next(M.options({})))
    assert.is_nil(next(M.options(nil)))
    local job = { spank_job_env = { [0] = opt("lwk") } }
    assert.are.equal("", M.options(job)["lwk"])
    job = { spank_job_env = { [1] = opt("lwk", "os=3") }, spank_job_env_size = 2 }
    assert.are.equal("os=3", M.options(job)["lwk"])
  end)
end)

-- A batch job whose environment holds VARS: slurmctld gives Lua a table
-- read by name (reading it for a job without a script logs a line).
local function batch_job(vars, entries, extra)
  local job = fake.job(entries or {}, extra)
  job.script = "#!/bin/sh\ntrue\n"
  job.environment = setmetatable({}, { __index = function(_, k) return vars[k] end })
  return job
end

describe("options in a batch job's environment", function()
  local M
  before_each(function() M = load_policy(SITE) end)

  it("reads srun's SLURM_SPANK_ form and slurmstepd's remote form", function()
    local opts = M.options(batch_job({ SLURM_SPANK__SLURM_SPANK_OPTION_lwk_lwk = "os=1" }))
    assert.are.equal("os=1", opts["lwk"])
    opts = M.options(batch_job({ _SLURM_SPANK_OPTION_lwk_contention_aware = "",
                                 _SLURM_SPANK_OPTION_lwk_sync_monitor = "(null)" }))
    assert.are.equal("", opts["contention-aware"])
    assert.are.equal("", opts["sync-monitor"])
  end)

  it("lets the command line win and says what only the environment gave", function()
    local job = batch_job({ SLURM_SPANK__SLURM_SPANK_OPTION_lwk_lwk = "os=3",
                            SLURM_SPANK__SLURM_SPANK_OPTION_lwk_sync_monitor = "" },
                          { opt("lwk", "os=2") })
    local opts, env_only = M.options_split(job)
    assert.are.equal("os=2", opts["lwk"])
    assert.are.same({ ["sync-monitor"] = "" }, env_only)
  end)

  it("never reads the environment of a job without a script (srun, salloc)", function()
    local job = fake.job({})
    job.environment = setmetatable({}, { __index = function() error("read for a job without a script") end })
    assert.is_nil(next(M.options(job)))
  end)

  it("refuses --lwk exported into a co-scheduling partition, and notes it for updates", function()
    local job = batch_job({ SLURM_SPANK__SLURM_SPANK_OPTION_lwk_lwk = "os=1" }, {}, { partition = "cosched" })
    assert.are.equal(slurm.ERROR, slurm_job_submit(job, PARTS, 1000))
    assert.truthy(fake.user[1]:find("lwk: --lwk: partition cosched shares nodes between jobs", 1, true), fake.user[1])
    job = batch_job({ _SLURM_SPANK_OPTION_lwk_lwk = "" }, {}, { partition = "batch", admin_comment = "site note" })
    assert.are.equal(slurm.SUCCESS, slurm_job_submit(job, PARTS, 1000))
    assert.are.equal(0, job.shared)
    assert.are.equal("site note; lwk-options: lwk", job.admin_comment)
    job = batch_job({ SLURM_SPANK__SLURM_SPANK_OPTION_lwk_contention_aware = "" }, {}, { partition = "batch" })
    assert.are.equal(slurm.ERROR, slurm_job_submit(job, PARTS, 1000))
    assert.truthy(fake.user[2]:find("lwk: --contention-aware: partition batch does not co-schedule", 1, true), fake.user[2])
  end)

  it("leaves the admin comment alone when the command line carries everything", function()
    local job = batch_job({ _SLURM_SPANK_OPTION_lwk_lwk = "os=2" }, { opt("lwk", "os=2") }, { partition = "batch" })
    assert.are.equal(slurm.SUCCESS, slurm_job_submit(job, PARTS, 1000))
    assert.is_nil(job.admin_comment)
  end)
end)

-- The cases the nodes' C parser is held to as well (check_options.c).
local function shared_cases()
  local cases = {}
  for line in io.lines(srcdir .. "/testsuite/fixtures/options/cases.tsv") do
    if line ~= "" and line:sub(1, 1) ~= "#" then
      local option, value, verdict, word = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)$")
      assert(option, "cases.tsv: a line that is not four fields: " .. line)
      value = value:gsub("\\x(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
      cases[#cases + 1] = { option = option, value = value, ok = verdict == "ok", word = word }
    end
  end
  return cases
end

describe("option values, judged as the nodes judge them", function()
  local M
  before_each(function() M = load_policy(SITE) end)

  it("agrees with the nodes' parser on every shared case", function()
    local cases = shared_cases()
    assert.is_true(#cases > 100, "only " .. #cases .. " cases")
    for _, c in ipairs(cases) do
      local why = M.check_value(c.option, c.value)
      local shown = "--" .. c.option .. "=" .. string.format("%q", c.value)
      if c.ok then
        assert.is_nil(why, shown .. " refused: " .. tostring(why))
      else
        assert.is_not_nil(why, shown .. " accepted")
        assert.truthy(why:find("^lwk: %-%-" .. c.option:gsub("%-", "%%-") .. ": "), why)
        assert.truthy(why:find(c.word, 1, true), shown .. ": '" .. why .. "' does not name '" .. c.word .. "'")
      end
    end
  end)

  it("words a refusal as the node does", function()
    assert.are.equal("lwk: --lwk: os='0' is not valid; os must be a whole number from 1 to 1024",
                     M.check_value("lwk", "os=0"))
    assert.are.equal("lwk: --sync-monitor: interval='1m' is not valid; interval must be a duration from 10ms to 3600s (unit us, ms or s)",
                     M.check_value("sync-monitor", "interval=1m"))
    assert.are.equal("lwk: --lwk: unknown key 'bar'; allowed keys: os, mem, numa, backend, hugepage, deleg_mem, deleg_cpu",
                     M.check_value("lwk", "bar=1"))
    assert.are.equal("lwk: --sync-monitor: dir='a\\x01b' is not valid; dir must be a path of at most 1023 characters, without ',' or control characters",
                     M.check_value("sync-monitor", "dir=a\1b"))
    assert.are.equal("lwk: --lwk: the value is longer than 4095 characters",
                     M.check_value("lwk", "os=1," .. string.rep("x", 4092)))
  end)

  it("refuses at submission a value on any road, shadowed or not, naming the key", function()
    local roads = {
      function(v) return fake.job({ opt("lwk", v) }) end,
      function(v) return fake.job({ opt("lwk", "os=1"), opt("lwk", v) }) end,
      function(v) return batch_job({ _SLURM_SPANK_OPTION_lwk_lwk = v }) end,
      function(v) return batch_job({ SLURM_SPANK__SLURM_SPANK_OPTION_lwk_lwk = v }) end,
      -- The command line's value wins in the policy, but slurmstepd
      -- still reads the environment's.
      function(v) return batch_job({ _SLURM_SPANK_OPTION_lwk_lwk = v }, { opt("lwk", "os=1") }) end,
    }
    for i, road in ipairs(roads) do
      fake.user = {}
      local job = road("backend=none")
      assert.are.equal(slurm.ERROR, slurm_job_submit(job, PARTS, 1000), "road " .. i)
      assert.are.equal("lwk: --lwk: backend='none' is not valid; backend must be one of auto|linux|mckernel",
                       fake.user[1], "road " .. i)
    end
    local job = batch_job({ SLURM_SPANK__SLURM_SPANK_OPTION_lwk_sync_monitor = "interval=1s,offset=2s" })
    assert.are.equal(slurm.ERROR, slurm_job_submit(job, PARTS, 1000))
    job = batch_job({ _SLURM_SPANK_OPTION_lwk_contention_aware = "probe=2m" }, {}, { partition = "cosched" })
    assert.are.equal(slurm.ERROR, slurm_job_submit(job, PARTS, 1000))
    assert.truthy(fake.user[#fake.user]:find("probe='2m' is not valid", 1, true), fake.user[#fake.user])
  end)

  it("passes good values on every road", function()
    local job = batch_job({ _SLURM_SPANK_OPTION_lwk_lwk = "os=2,mem=1G",
                            SLURM_SPANK__SLURM_SPANK_OPTION_lwk_sync_monitor = "(null)" },
                          { opt("lwk", "os=1") }, { partition = "batch" })
    assert.are.equal(slurm.SUCCESS, slurm_job_submit(job, PARTS, 1000))
  end)
end)

describe("lwk_policy.conf", function()
  local M
  before_each(function() M = load_policy(SITE) end)

  it("reads node types, partitions and features with their defaults", function()
    local c = assert(M.parse_config(SITE))
    assert.are.equal(6, c.node_types.opteron.die_cpus)
    assert.are.equal(48, c.node_types.opteron.node_cpus)
    assert.are.equal(36, c.node_types.xeon.die_cpus)
    assert.is_true(c.partitions.batch.DieGranular)
    assert.is_false(c.partitions.batch.CoSchedule)
    assert.is_false(c.partitions.plain.DieGranular)
    assert.are.same({ "cosched" }, c.cosched)
    assert.are.equal("opteron", c.features.dies.NodeType)
  end)

  it("accepts what lwk-topology --format conf prints", function()
    local c = assert(M.parse_config(
      "NodeType=epyc Packages=2 Dies=32 CoresPerDie=4 ThreadsPerCore=2 NumaNodes=2\n"))
    assert.are.equal(8, c.node_types.epyc.die_cpus)
  end)

  local function rejects(text, line, ...)
    local c, err = M.parse_config(text, "lwk_policy.conf")
    assert.is_nil(c)
    assert.truthy(err:find("lwk_policy.conf line " .. line .. ": ", 1, true), err)
    for _, needle in ipairs({ ... }) do
      assert.truthy(err:find(needle, 1, true), err .. " lacks " .. needle)
    end
  end

  it("names the line and the key at fault", function()
    rejects("NodeType=a Dies=2 CoresPerDie=2\nNodes=x", 2, "'Nodes=x' does not start a record",
            "NodeType, Partition, Feature")
    rejects("NodeType=a Dies=2 CoresPerDie=2 Cores=4", 1, "unknown key 'Cores'",
            "CoresPerDie, Dies, NumaNodes, Packages, ThreadsPerCore")
    rejects("\n\nNodeType=a Dies=two CoresPerDie=2", 3, "Dies='two' is not valid", "from 1 to 65535")
    rejects("NodeType=a Dies=0 CoresPerDie=2", 1, "Dies='0'")
    rejects("NodeType=a Dies=2 CoresPerDie=2 Dies=3", 1, "key 'Dies' is given twice")
    rejects("NodeType=a Dies=2", 1, "needs Dies= and CoresPerDie=")
    rejects("NodeType=a Dies=1 CoresPerDie=1\nNodeType=a Dies=1 CoresPerDie=1", 2,
            "NodeType=a is defined twice (first on line 1)")
    rejects("Partition=p", 1, "Partition=p needs NodeType=")
    rejects("NodeType=a Dies=1 CoresPerDie=1\n\nPartition=p NodeType=b", 3,
            "NodeType=b is not defined (defined: a)")
    rejects("NodeType=a Dies=1 CoresPerDie=1\nPartition=p NodeType=a CoSchedule=maybe", 2,
            "CoSchedule='maybe'", "yes or no")
    rejects("NodeType=a;b Dies=1 CoresPerDie=1", 1, "is not a name")
    rejects("Feature=f NodeType=zz", 1, "NodeType=zz is not defined (defined: none)")
  end)

  it("ignores comments and blank lines", function()
    assert.truthy(M.parse_config("# only a comment\n\n   \n"))
  end)
end)

describe("die placement", function()
  local M
  before_each(function() M = load_policy(SITE) end)

  local function plan(extra, entries) return plan_for(M, extra, entries) end

  it("leaves jobs outside the policy untouched", function()
    local p = plan({ num_tasks = 3, cpus_per_task = NO_VAL16 })
    assert.is_nil(p.reject)
    assert.are.same({}, p.set)
    p = plan({ partition = "plain", num_tasks = 5, threads_per_core = 8 })
    assert.is_nil(p.reject)
    assert.are.same({}, p.set)
  end)

  it("rounds one CPU up to a whole die, packed on one die", function()
    assert.are.same({ min_cpus = 6, ntasks_per_socket = 6 }, plan({ partition = "batch", num_tasks = 1 }).set)
  end)

  it("leaves a request of whole dies as it is, but for packing", function()
    assert.are.same({ ntasks_per_socket = 6 }, plan({ partition = "batch", num_tasks = 6, min_cpus = 6 }).set)
    assert.are.same({}, plan({ partition = "batch", num_tasks = 12, ntasks_per_socket = 6 }).set)
  end)

  it("packs as many tasks on a die as fit, and never more", function()
    assert.are.equal(3, plan({ partition = "batch", num_tasks = 4, cpus_per_task = 2 }).set.ntasks_per_socket)
    assert.are.equal(1, plan({ partition = "batch", cpus_per_task = 4 }).set.ntasks_per_socket)
    -- A task wider than a die: one a die, or Slurm spreads its cores
    -- over as many dies as it has cores (issue 14, section 4).
    assert.are.equal(1, plan({ partition = "batch", cpus_per_task = 12 }).set.ntasks_per_socket)
    assert.is_nil(plan({ partition = "batch", ntasks_per_socket = 2 }).set.ntasks_per_socket)
    assert.is_nil(plan({ partition = "batch", ntasks_per_socket = 6 }).reject)
  end)

  it("rounds tasks x CPUs per task and --mincpus-style totals", function()
    assert.are.equal(12, plan({ partition = "batch", num_tasks = 7 }).set.min_cpus)
    assert.are.equal(12, plan({ partition = "batch", num_tasks = 4, cpus_per_task = 2 }).set.min_cpus)
    assert.are.equal(18, plan({ partition = "batch", min_cpus = 13 }).set.min_cpus)
    assert.are.equal(48, plan({ partition = "batch", num_tasks = 43 }).set.min_cpus)
  end)

  it("treats 65534 as a number in 32-bit fields", function()
    local p = plan({ partition = "batch", num_tasks = 65534, max_nodes = NO_VAL })
    assert.are.equal(65538, p.set.min_cpus)
  end)

  it("treats Slurm's sentinels as unset", function()
    local p = plan({ partition = "batch", num_tasks = NO_VAL, cpus_per_task = NO_VAL16,
                     min_cpus = NO_VAL, ntasks_per_node = NO_VAL16, pn_min_cpus = NO_VAL16,
                     threads_per_core = NO_VAL16, sockets_per_node = NO_VAL16, max_nodes = NO_VAL })
    assert.is_nil(p.reject)
    assert.are.same({ min_cpus = 6, ntasks_per_socket = 6 }, p.set)
  end)

  it("counts hyperthreads: a Xeon die is 36 CPUs", function()
    assert.are.equal(36, plan({ partition = "xeon", num_tasks = 1 }).set.min_cpus)
    assert.is_nil(plan({ partition = "xeon", threads_per_core = 2 }).reject)
  end)

  it("rounds CPUs per node up to whole dies", function()
    local p = plan({ partition = "batch", ntasks_per_node = 5, num_tasks = 10 })
    assert.are.equal(6, p.set.pn_min_cpus)
    assert.are.equal(12, p.set.min_cpus)
    assert.are.equal(12, plan({ partition = "batch", pn_min_cpus = 7 }).set.pn_min_cpus)
  end)

  local function refused(extra, ...)
    local p = plan(extra)
    assert.is_string(p.reject, "expected a refusal")
    assert.truthy(p.reject:find("^lwk: "), p.reject)
    for _, needle in ipairs({ ... }) do
      assert.truthy(p.reject:find(needle, 1, true), p.reject .. " lacks " .. needle)
    end
  end

  it("refuses what cannot fit and names the nearest valid request", function()
    refused({ partition = "batch", cpus_per_task = 49 }, "die placement", "--cpus-per-task=49",
            "8 dies x 6 CPUs", "nearest valid: --cpus-per-task=48")
    refused({ partition = "batch", ntasks_per_node = 25, cpus_per_task = 2 },
            "50 CPUs per node", "nearest valid: --ntasks-per-node=24")
    refused({ partition = "batch", threads_per_core = 2 }, "--threads-per-core=2 cannot fit",
            "1 thread(s) per core", "nearest valid: --threads-per-core=1")
    refused({ partition = "batch", sockets_per_node = 9 }, "more dies than a node",
            "nearest valid: --sockets-per-node=8")
    refused({ partition = "batch", num_tasks = 49, max_nodes = 1 }, "49 CPUs on at most 1 node",
            "nearest valid: --nodes=2, or --ntasks=48")
    refused({ partition = "batch", ntasks_per_socket = 4, cpus_per_task = 2 },
            "--ntasks-per-socket=4 does not fit", "room for 3 task(s) of 2 CPU(s)",
            "nearest valid: --ntasks-per-socket=3")
  end)

  it("accepts the boundaries exactly", function()
    assert.is_nil(plan({ partition = "batch", cpus_per_task = 48 }).reject)
    assert.is_nil(plan({ partition = "batch", ntasks_per_node = 48 }).reject)
    assert.is_nil(plan({ partition = "batch", num_tasks = 48, max_nodes = 1 }).reject)
    assert.is_nil(plan({ partition = "batch", sockets_per_node = 8 }).reject)
  end)

  it("applies to the default partition when it is die-granular", function()
    local parts = { batch = { flag_default = 1 } }
    local job = fake.job({}, { num_tasks = 2 })
    assert.are.equal(6, M.plan(job, {}, M.cfg, parts).set.min_cpus)
  end)

  it("applies to jobs that ask for a die feature", function()
    assert.are.equal(6, plan({ features = "bigmem&dies", num_tasks = 1 }).set.min_cpus)
    assert.are.same({}, plan({ features = "diesel", num_tasks = 1 }).set)
    assert.are.same({}, plan({ features = "diesel", num_tasks = 1 }).notes)
  end)

  it("handles partition lists", function()
    assert.are.equal(6, plan({ partition = "batch,cosched", num_tasks = 1 }).set.min_cpus)
    refused({ partition = "batch,plain" }, "partition batch places jobs by whole dies and plain does not")
    refused({ partition = "batch,xeon" }, "different dies (NodeType opteron and xeon)")
  end)
end)

describe("plugin options", function()
  local M
  before_each(function() M = load_policy(SITE) end)

  local function plan(extra, entries) return plan_for(M, extra, entries) end

  it("sends --contention-aware jobs to the co-scheduling partition", function()
    local p = plan({ num_tasks = 2 }, { opt("contention_aware") })
    assert.is_nil(p.reject)
    assert.are.equal("cosched", p.set.partition)
    assert.are.equal(6, p.set.min_cpus)
  end)

  it("refuses --contention-aware elsewhere, naming the right partition", function()
    local p = plan({ partition = "batch" }, { opt("contention_aware") })
    assert.truthy(p.reject:find("lwk: --contention-aware: partition batch does not co-schedule jobs by dies; use --partition=cosched", 1, true), p.reject)
    assert.is_nil(plan({ partition = "cosched" }, { opt("contention_aware") }).reject)
    -- In a list, Slurm may start it in any partition: all must co-schedule.
    p = plan({ partition = "batch,cosched" }, { opt("contention_aware") })
    assert.truthy(p.reject and p.reject:find("partition batch,cosched does not co-schedule", 1, true), p.reject)
  end)

  it("refuses --contention-aware when no partition co-schedules", function()
    M = load_policy("NodeType=a Dies=2 CoresPerDie=2\nPartition=p NodeType=a\n")
    local job = fake.job({ opt("contention_aware") })
    local p = M.plan(job, M.options(job), M.cfg, PARTS)
    assert.truthy(p.reject:find("no co-scheduling partition is configured", 1, true))
  end)

  it("gives --lwk jobs whole nodes", function()
    assert.are.equal(0, plan({}, { opt("lwk", "os=2") }).set.shared)
    assert.are.equal(0, plan({ partition = "batch" }, { opt("lwk") }).set.shared)
    assert.is_nil(plan({ shared = 0 }, { opt("lwk") }).set.shared)
  end)

  it("refuses --lwk in a co-scheduling partition, naming the others", function()
    local p = plan({ partition = "cosched" }, { opt("lwk") })
    assert.truthy(p.reject:find("lwk: --lwk: partition cosched shares nodes between jobs, --lwk needs whole nodes; use --partition=batch or --partition=epyc or --partition=plain or --partition=xeon", 1, true), p.reject)
  end)

  it("--sync-monitor alone changes nothing", function()
    assert.are.same({}, plan({ num_tasks = 1 }, { opt("sync_monitor") }).set)
  end)

  it("refuses the plugin's jobs while the config is missing, and only them", function()
    M = load_policy(nil)
    local job = fake.job({ opt("lwk") })
    local p = M.plan(job, M.options(job), M.cfg, PARTS, M.cfg_error)
    assert.truthy(p.reject:find("lwk_policy.conf is missing or invalid", 1, true))
    assert.truthy(p.reject:find("No such file", 1, true))
    job = fake.job({}, { partition = "batch", num_tasks = 1 })
    assert.is_nil(M.plan(job, {}, M.cfg, PARTS, M.cfg_error).reject)
  end)
end)

describe("slurm_job_submit", function()
  local M
  before_each(function() M = load_policy(SITE) end)

  it("passes jobs without the plugin's options untouched and silently", function()
    local job = fake.job({}, { min_cpus = 3 })
    assert.are.equal(slurm.SUCCESS, slurm_job_submit(job, PARTS, 1000))
    assert.are.equal(3, job.min_cpus)
    assert.are.equal(0, #fake.logs)
  end)

  it("logs the options of a plugin job", function()
    local job = fake.job({ opt("lwk", "os=2"), opt("sync_monitor") })
    assert.are.equal(slurm.SUCCESS, slurm_job_submit(job, PARTS, 1000))
    assert.are.equal("lwk: job_submit: uid 1000 name t: --lwk=os=2 --sync-monitor [whole nodes]", fake.logs[1])
    assert.are.equal(0, job.shared)
  end)

  it("writes the rounding into the job and logs it", function()
    local job = fake.job({}, { partition = "batch", num_tasks = 3 })
    assert.are.equal(slurm.SUCCESS, slurm_job_submit(job, PARTS, 1000))
    assert.are.equal(6, job.min_cpus)
    assert.truthy(fake.logs[1]:find("[CPUs 3 -> 6 (1 die(s))]", 1, true), fake.logs[1])
    assert.are.equal(0, #fake.user)
  end)

  it("tells the user why a job is refused", function()
    local job = fake.job({}, { partition = "batch", cpus_per_task = 100 })
    assert.are.equal(slurm.ERROR, slurm_job_submit(job, PARTS, 1000))
    assert.truthy(fake.user[1]:find("^lwk: die placement: %-%-cpus%-per%-task=100"))
  end)
end)

-- The site's job_submit.lua as slurmctld runs it: lua/job_submit.lua with
-- the module's path where the package installs it replaced by the source
-- tree's, written into a directory of its own (slurm.conf's) with
-- lwk_policy.conf next to it; site_rule, when given, is a line of the
-- site's own put where the example says.
local function site_script(site_rule)
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -m 700 " .. dir)
  local f = assert(io.open(srcdir .. "/lua/job_submit.lua"))
  local text = f:read("*a")
  f:close()
  local module = srcdir:sub(1, 1) == "/" and srcdir or (os.getenv("PWD") .. "/" .. srcdir)
  local n
  text, n = text:gsub("/usr/share/slurm%-lwk/lwk_policy%.lua", module .. "/lua/lwk_policy.lua")
  assert.are.equal(1, n)
  if site_rule then
    text, n = text:gsub("  %-%- The site's own rules here%.\n", "  " .. site_rule .. "\n", 1)
    assert.are.equal(1, n)
  end
  f = assert(io.open(dir .. "/job_submit.lua", "w"))
  f:write(text)
  f:close()
  f = assert(io.open(dir .. "/lwk_policy.conf", "w"))
  f:write(SITE)
  f:close()
  fake.install()
  _G.slurm_job_submit, _G.slurm_job_modify = nil, nil
  dofile(dir .. "/job_submit.lua")
  return dir
end

describe("the site's job_submit.lua", function()
  it("runs the policy first, with lwk_policy.conf next to it, then the site's own rule", function()
    local dir = site_script('job_desc.comment = "site rule"')
    -- The policy's rounding, from the lwk_policy.conf next to the script.
    local job = fake.job({}, { partition = "batch", num_tasks = 3 })
    assert.are.equal(slurm.SUCCESS, slurm_job_submit(job, PARTS, 1000))
    assert.are.equal(6, job.min_cpus)
    assert.are.equal("site rule", job.comment)
    -- A refusal of the policy is the script's; the site's rule not run.
    job = fake.job({ opt("lwk", "os=x") })
    assert.are.equal(slurm.ERROR, slurm_job_submit(job, PARTS, 1000))
    assert.is_nil(job.comment)
    assert.truthy(fake.user[1]:find("os='x' is not valid", 1, true), fake.user[1])
    -- An update goes through the policy too.
    assert.are.equal(slurm.ERROR,
      slurm_job_modify({ partition = "cosched" }, { partition = "batch", spank_job_env = { [0] = opt("lwk", "os=1") },
                        spank_job_env_size = 1 }, PARTS, 1000))
    os.execute("rm -rf " .. dir)
  end)

  it("reads lwk_policy.conf next to itself, not next to the module", function()
    local dir = site_script()
    os.remove(dir .. "/lwk_policy.conf")
    local job = fake.job({ opt("lwk") })
    assert.are.equal(slurm.ERROR, slurm_job_submit(job, PARTS, 1000))
    assert.truthy(fake.user[1]:find(dir .. "/lwk_policy.conf", 1, true), fake.user[1])
    os.execute("rm -rf " .. dir)
  end)
end)

describe("config reloading", function()
  it("applies an edit at the next call and logs each new error once", function()
    local M = load_policy(SITE)
    M.site_text = SITE .. "Bogus=1\n"
    local _, bogus_line = SITE:gsub("\n", "")
    bogus_line = bogus_line + 1
    local job = fake.job({ opt("lwk") })
    assert.are.equal(slurm.ERROR, slurm_job_submit(job, PARTS, 0))
    assert.truthy(fake.user[1]:find("'Bogus=1' does not start a record", 1, true))
    assert.are.equal(slurm.ERROR, slurm_job_submit(fake.job({ opt("lwk") }), PARTS, 0))
    local errors = 0
    for _, l in ipairs(fake.logs) do
      if l:find("^error: lwk: job_submit.lua: .*lwk_policy.conf line " .. bogus_line .. ":") then errors = errors + 1 end
    end
    assert.are.equal(1, errors)
    assert.are.equal(slurm.SUCCESS, slurm_job_submit(fake.job({}), PARTS, 0))
    M.site_text = SITE
    assert.are.equal(slurm.SUCCESS, slurm_job_submit(fake.job({ opt("lwk") }), PARTS, 0))
  end)
end)

describe("slurm_job_modify", function()
  local M
  before_each(function() M = load_policy(SITE) end)

  it("rounds a new CPU count in a die-granular partition", function()
    local jd = { min_cpus = 3, num_tasks = NO_VAL, cpus_per_task = 1 }
    assert.are.equal(slurm.SUCCESS, slurm_job_modify(jd, { partition = "batch" }, PARTS, 0))
    assert.are.equal(6, jd.min_cpus)
  end)

  it("leaves other partitions and other updates alone", function()
    local jd = { min_cpus = 3 }
    assert.are.equal(slurm.SUCCESS, slurm_job_modify(jd, { partition = "plain" }, PARTS, 0))
    assert.are.equal(3, jd.min_cpus)
    jd = { time_limit = 10, min_cpus = NO_VAL }
    assert.are.equal(slurm.SUCCESS, slurm_job_modify(jd, { partition = "batch" }, PARTS, 0))
    assert.are.equal(NO_VAL, jd.min_cpus)
  end)

  it("refuses an update that cannot be placed", function()
    local jd = { cpus_per_task = 64 }
    assert.are.equal(slurm.ERROR, slurm_job_modify(jd, { partition = "batch" }, PARTS, 0))
    assert.truthy(fake.user[1]:find("nearest valid: --cpus-per-task=48", 1, true))
  end)
end)

describe("slurm_job_modify of a job's partition", function()
  local M
  before_each(function() M = load_policy(SITE) end)

  -- A pending job's record as slurmctld shows it to Lua: only the
  -- fields src/lua/slurm_lua.c gives (22.05 to 26.05); cpus_per_task,
  -- num_tasks, ntasks_per_*, threads_per_core and shared read nil.
  local EXPOSED = { account = 1, admin_comment = 1, features = 1, job_id = 1, max_cpus = 1,
                    max_nodes = 1, min_cpus = 1, min_nodes = 1, name = 1, nodes = 1,
                    partition = 1, pn_min_cpus = 1, spank_job_env = 1,
                    spank_job_env_size = 1, time_limit = 1, user_id = 1 }
  local function rec(partition, entries, extra)
    local r = fake.job(entries, extra)
    r.partition = partition
    local shown = {}
    for k, v in pairs(r) do if EXPOSED[k] then shown[k] = v end end
    return shown
  end

  it("refuses to move a --lwk job into a co-scheduling partition, naming the rule", function()
    assert.are.equal(slurm.ERROR,
      slurm_job_modify({ partition = "cosched" }, rec("batch", { opt("lwk", "os=1") }), PARTS, 1000))
    assert.truthy(fake.user[1]:find("lwk: --lwk: partition cosched shares nodes between jobs, --lwk needs whole nodes", 1, true), fake.user[1])
  end)

  it("refuses to move a --contention-aware job out of the co-scheduling partition", function()
    assert.are.equal(slurm.ERROR,
      slurm_job_modify({ partition = "batch" }, rec("cosched", { opt("contention_aware") }), PARTS, 1000))
    assert.truthy(fake.user[1]:find("lwk: --contention-aware: partition batch does not co-schedule jobs by dies; use --partition=cosched", 1, true), fake.user[1])
  end)

  it("judges options that came from the environment, kept in the admin comment", function()
    local r = rec("batch", {}, { admin_comment = "site note; lwk-options: lwk,sync-monitor" })
    assert.are.same({ lwk = "", ["sync-monitor"] = "" }, M.record_options(r))
    assert.are.equal(slurm.ERROR, slurm_job_modify({ partition = "cosched" }, r, PARTS, 1000))
    assert.truthy(fake.user[1]:find("lwk: --lwk: partition cosched", 1, true))
  end)

  it("keeps every option name in the mark, whatever the values hold (';', spaces)", function()
    local vars = { _SLURM_SPANK_OPTION_lwk_sync_monitor = "dir=/tmp/x; y", _SLURM_SPANK_OPTION_lwk_contention_aware = "" }
    local job = fake.job({}, { partition = "cosched", script = "#!/bin/sh\n",
                               environment = setmetatable({}, { __index = function(_, k) return vars[k] end }) })
    assert.are.equal(slurm.SUCCESS, slurm_job_submit(job, PARTS, 1000))
    assert.are.equal("lwk-options: sync-monitor,contention-aware", job.admin_comment)
    local r = rec("cosched", {}, { admin_comment = job.admin_comment })
    assert.are.same({ ["sync-monitor"] = "", ["contention-aware"] = "" }, M.record_options(r))
    assert.are.equal(slurm.ERROR, slurm_job_modify({ partition = "plain" }, r, PARTS, 1000))
    assert.truthy(fake.user[1]:find("lwk: --contention-aware: partition plain", 1, true), fake.user[1])
    -- The last mark counts; an earlier site note may hold anything.
    r = rec("batch", {}, { admin_comment = "note lwk-options: bogus;x; lwk-options: lwk" })
    assert.are.same({ lwk = "" }, M.record_options(r))
    -- A job still pending from before names only.
    r = rec("batch", {}, { admin_comment = "lwk-options: --lwk=os=1 --sync-monitor" })
    assert.are.same({ lwk = "", ["sync-monitor"] = "" }, M.record_options(r))
  end)

  it("lets other jobs and allowed moves through", function()
    assert.are.equal(slurm.SUCCESS, slurm_job_modify({ partition = "cosched" }, rec("batch", {}), PARTS, 1000))
    assert.are.equal(slurm.SUCCESS,
      slurm_job_modify({ partition = "plain" }, rec("batch", { opt("lwk") }), PARTS, 1000))
    assert.are.equal(slurm.SUCCESS,
      slurm_job_modify({ time_limit = 5 }, rec("cosched", { opt("lwk") }), PARTS, 1000))
    assert.are.equal(0, #fake.user)
  end)
end)

describe("slurm_job_modify with what slurmctld shows (no cpus_per_task, no ntasks_per_socket)", function()
  local M
  before_each(function() M = load_policy(SITE .. "Partition=epyc2 NodeType=epyc\n") end)
  local PARTS2 = { debug = { flag_default = 1 }, epyc = {}, epyc2 = {}, batch = {}, plain = {}, cosched = {} }
  -- What a job -n 2 -c 9 -p epyc has after job_submit (ntasks_per_socket=1,
  -- min_cpus=24) as Lua sees its record: no cpus_per_task, no tasks.
  local function rec(partition, extra)
    local r = { partition = partition, min_cpus = 24, pn_min_cpus = 16, max_nodes = NO_VAL,
                spank_job_env = {}, spank_job_env_size = 0 }
    for k, v in pairs(extra or {}) do r[k] = v end
    return r
  end
  local function upd(extra)
    local jd = { min_cpus = NO_VAL, num_tasks = NO_VAL, cpus_per_task = NO_VAL16,
                 pn_min_cpus = NO_VAL16, ntasks_per_socket = NO_VAL16, ntasks_per_node = NO_VAL16 }
    for k, v in pairs(extra) do jd[k] = v end
    return jd
  end

  it("never writes ntasks_per_socket (Slurm denies that to users) and refuses a CPU change it cannot judge", function()
    local jd = upd({ num_tasks = 3 })
    assert.are.equal(slurm.ERROR, slurm_job_modify(jd, rec("epyc"), PARTS2, 1000))
    assert.are.equal(NO_VAL16, jd.ntasks_per_socket)
    assert.are.equal(NO_VAL, jd.min_cpus)
    assert.truthy(fake.user[1]:find("^lwk: die placement: .*cancel the job and submit it again"), fake.user[1])
    for _, f in ipairs({ { min_cpus = 30 }, { pn_min_cpus = 20 } }) do
      fake.user = {}
      jd = upd(f)
      assert.are.equal(slurm.ERROR, slurm_job_modify(jd, rec("epyc"), PARTS2, 1000))
      assert.are.equal(NO_VAL16, jd.ntasks_per_socket)
    end
  end)

  it("moves a job between partitions of the same dies and changes nothing", function()
    local jd = upd({ partition = "epyc2" })
    assert.are.equal(slurm.SUCCESS, slurm_job_modify(jd, rec("epyc"), PARTS2, 0))
    assert.are.equal(NO_VAL16, jd.ntasks_per_socket)
    assert.are.equal(NO_VAL, jd.min_cpus)
    assert.are.equal(NO_VAL16, jd.pn_min_cpus)
  end)

  it("refuses a move onto other dies or into the policy from outside it", function()
    for _, m in ipairs({ { "plain", "batch" }, { "debug", "epyc" }, { "epyc", "batch" } }) do
      fake.user = {}
      local jd = upd({ partition = m[2] })
      assert.are.equal(slurm.ERROR, slurm_job_modify(jd, rec(m[1]), PARTS2, 1000), m[1] .. " -> " .. m[2])
      assert.truthy(fake.user[1]:find("cancel the job and submit it again", 1, true), fake.user[1])
      assert.are.equal(NO_VAL16, jd.ntasks_per_socket)
    end
    -- Out of the policy: nothing to round.
    assert.are.equal(slurm.SUCCESS, slurm_job_modify(upd({ partition = "plain" }), rec("epyc"), PARTS2, 1000))
  end)

  it("rounds when the update itself gives --cpus-per-task, still without ntasks_per_socket", function()
    local jd = upd({ num_tasks = 3, cpus_per_task = 3 })
    assert.are.equal(slurm.SUCCESS, slurm_job_modify(jd, rec("epyc", { min_cpus = 9, pn_min_cpus = 3 }), PARTS2, 1000))
    assert.are.equal(12, jd.min_cpus)
    assert.are.equal(NO_VAL16, jd.ntasks_per_socket)
  end)
end)

describe("die placement on many-die nodes with threads (16 dies x 4 cores x 2)", function()
  local M
  before_each(function() M = load_policy(SITE) end)

  local function plan(extra) extra.partition = "epyc"; return plan_for(M, extra) end

  -- What Slurm 22.05 gave on the declared-topology dev cluster with
  -- these fields (testsuite/integration/t40-policy.sh): exact dies.
  it("keeps a task wider than a die on the fewest dies, whole", function()
    for _, c in ipairs({ { 9, 16 }, { 12, 16 }, { 16, 16 }, { 17, 24 }, { 64, 64 } }) do
      local p = plan({ num_tasks = 1, cpus_per_task = c[1], pn_min_cpus = c[1], min_cpus = c[1] })
      assert.is_nil(p.reject)
      assert.are.equal(1, p.set.ntasks_per_socket, "-c " .. c[1])
      -- Its CPUs a multiple of a die's: Slurm 23.02.5 and later give a
      -- node no more CPUs than whole tasks fill, so a minimum alone
      -- (16 for a -c 9) would be unreachable there on a node of 16.
      assert.are.equal(c[2], p.set.cpus_per_task or c[1], "-c " .. c[1])
      assert.are.equal(c[2], p.set.min_cpus or c[1], "-c " .. c[1])
      if c[2] ~= c[1] then
        assert.truthy(table.concat(p.notes, "; "):find(
          string.format("CPUs per task %d -> %d (%d whole dies)", c[1], c[2], c[2] / 8), 1, true), table.concat(p.notes, "; "))
      end
    end
  end)

  it("gives each of several wide tasks whole dies of its own", function()
    local p = plan({ num_tasks = 2, cpus_per_task = 9 })
    assert.are.equal(16, p.set.cpus_per_task)
    assert.are.equal(32, p.set.min_cpus)
    assert.are.equal(1, p.set.ntasks_per_socket)
    -- A CPU minimum counts in whole rounded tasks: Slurm gives no more
    -- CPUs than whole tasks fill (40 CPUs of -c 9 tasks: 3 tasks of 16).
    p = plan({ num_tasks = 1, cpus_per_task = 9, min_cpus = 40 })
    assert.are.equal(16, p.set.cpus_per_task)
    assert.are.equal(48, p.set.min_cpus)
    p = plan({ num_tasks = 1, cpus_per_task = 9, pn_min_cpus = 40 })
    assert.are.equal(48, p.set.pn_min_cpus)
    -- A refusal names the rounding that made the job too big.
    local r = plan({ num_tasks = 3, cpus_per_task = 41, max_nodes = 1 })
    assert.truthy(r.reject and r.reject:find("144 CPUs (each task's 41 CPUs rounded up to 48: a task wider than a die gets whole dies) on at most 1 node(s)", 1, true), r.reject)
    r = plan({ ntasks_per_node = 3, cpus_per_task = 41 })
    assert.truthy(r.reject and r.reject:find("144 CPUs per node (each task's 41 CPUs rounded up to 48", 1, true), r.reject)
    -- Per node too: --ntasks-per-node=2 of -c 9 is 4 dies a node, the
    -- 2 x 16 CPUs Slurm counts from the tasks (no minimum to add).
    p = plan({ ntasks_per_node = 2, cpus_per_task = 9 })
    assert.are.equal(16, p.set.cpus_per_task)
    assert.is_nil(p.set.pn_min_cpus)
  end)

  it("never asks for more tasks' CPUs than the rounded dies hold", function()
    -- 3 tasks of 3 CPUs: 2 a die, 2 dies; 16 CPUs would make Slurm
    -- count 5 tasks and take a third die.
    local p = plan({ num_tasks = 3, cpus_per_task = 3 })
    assert.are.equal(2, p.set.ntasks_per_socket)
    assert.are.equal(12, p.set.min_cpus)
    -- 4 tasks of 6 CPUs: one a die, 4 dies (Slurm never splits them).
    p = plan({ num_tasks = 4, cpus_per_task = 6 })
    assert.are.equal(1, p.set.ntasks_per_socket)
    assert.is_nil(p.set.min_cpus)
  end)

  it("never lowers a CPU minimum", function()
    -- 13 CPUs in tasks of 2: 7 tasks, 4 a die, 2 dies of 16 CPUs.
    local p = plan({ num_tasks = 1, cpus_per_task = 2, min_cpus = 13 })
    assert.are.equal(16, p.set.min_cpus)
  end)

  it("rounds its own result to itself (idempotent), also for tasks wider than a die", function()
    for _, j in ipairs({ { num_tasks = 1, cpus_per_task = 9 }, { num_tasks = 2, cpus_per_task = 9 },
                         { num_tasks = 3, cpus_per_task = 3 }, { num_tasks = 1, cpus_per_task = 17, pn_min_cpus = 17 } }) do
      local p = plan(j)
      local again = {}
      for k, v in pairs(j) do again[k] = v end
      for k, v in pairs(p.set) do again[k] = v end
      local q = plan(again)
      assert.is_nil(q.set.min_cpus, "min_cpus " .. tostring(p.set.min_cpus))
      assert.is_nil(q.set.pn_min_cpus)
    end
    local p = plan({ num_tasks = 1, cpus_per_task = 9, min_cpus = 16 })
    assert.is_nil(p.set.min_cpus) -- 16 CPUs are 2 dies already
  end)

  it("counts the CPUs --ntasks-per-core lets a task use on a core", function()
    local p = plan({ num_tasks = 3, ntasks_per_core = 1 })
    assert.are.equal(4, p.set.ntasks_per_socket) -- one task a core: 4 a die
    assert.are.equal(4, p.set.min_cpus)
    p = plan({ num_tasks = 3, ntasks_per_core = 2 })
    assert.are.equal(8, p.set.ntasks_per_socket)
    p = plan({ num_tasks = 1, cpus_per_task = 3, ntasks_per_core = 1 }) -- 2 CPUs a core
    assert.are.equal(2, p.set.ntasks_per_socket)
  end)

  it("counts one task a core where the site says OneTaskPerCore=yes (CR_ONE_TASK_PER_CORE)", function()
    M = load_policy(SITE .. "Partition=epyc1t NodeType=epyc OneTaskPerCore=yes\nFeature=dies1t NodeType=epyc OneTaskPerCore=yes\n")
    for _, extra in ipairs({ { partition = "epyc1t" }, { features = "dies1t" } }) do
      extra.num_tasks = 3
      local p = plan_for(M, extra)
      assert.are.equal(4, p.set.ntasks_per_socket)
      assert.are.equal(4, p.set.min_cpus)
    end
    local p = plan_for(M, { partition = "epyc1t", num_tasks = 3, ntasks_per_core = 2 })
    assert.are.equal(8, p.set.ntasks_per_socket) -- the job's own value wins
    local cfg, err = M.parse_config(SITE .. "Partition=x NodeType=epyc OneTaskPerCore=1\n")
    assert.is_nil(cfg)
    assert.truthy(err:find("OneTaskPerCore='1' is not valid; OneTaskPerCore must be yes or no", 1, true), err)
  end)

  it("refuses zero or negative counts that would divide by zero", function()
    for _, f in ipairs({ { "ntasks_per_socket", "--ntasks-per-socket" }, { "cpus_per_task", "--cpus-per-task" },
                         { "ntasks_per_core", "--ntasks-per-core" }, { "threads_per_core", "--threads-per-core" } }) do
      for _, v in ipairs({ 0, -1 }) do
        local p = plan({ num_tasks = 3, [f[1]] = v })
        assert.truthy(p.reject and p.reject:find("lwk: die placement: " .. f[2] .. "=" .. v .. " is not valid", 1, true), tostring(p.reject))
        local job = fake.job({}, { partition = "epyc", num_tasks = 3, [f[1]] = v })
        fake.user = {}
        assert.are.equal(slurm.ERROR, slurm_job_submit(job, PARTS, 1000))
        assert.truthy(fake.user[1]:find("is not valid", 1, true), fake.user[1])
      end
    end
  end)

  it("counts one CPU a core with --threads-per-core=1", function()
    local p = plan({ num_tasks = 1, cpus_per_task = 20, threads_per_core = 1 })
    assert.are.equal(1, p.set.ntasks_per_socket)
    assert.is_nil(p.set.min_cpus) -- 20 CPUs are 5 whole dies of 4 cores
    p = plan({ num_tasks = 1, cpus_per_task = 5, threads_per_core = 1 })
    assert.are.equal(8, p.set.min_cpus)
    p = plan({ num_tasks = 9, threads_per_core = 1 })
    assert.are.equal(4, p.set.ntasks_per_socket)
    assert.are.equal(12, p.set.min_cpus)
    local r = plan({ cpus_per_task = 65, threads_per_core = 1 })
    assert.truthy(r.reject and r.reject:find("16 dies x 4 CPUs at --threads-per-core=1); nearest valid: --cpus-per-task=64", 1, true), r.reject)
  end)

  it("refuses more dies than a node has, naming the nearest valid request", function()
    local r = plan({ num_tasks = 2, cpus_per_task = 129, max_nodes = 1 })
    assert.truthy(r.reject and r.reject:find("--cpus-per-task=129 is more than a node of epyc has (16 dies x 8 CPUs); nearest valid: --cpus-per-task=128", 1, true), r.reject)
    r = plan({ num_tasks = 3, cpus_per_task = 48, max_nodes = 1 })
    assert.truthy(r.reject and r.reject:find("144 CPUs on at most 1 node(s)", 1, true), r.reject)
    assert.truthy(r.reject:find("nearest valid: --nodes=2, or --ntasks=2", 1, true), r.reject)
    r = plan({ ntasks_per_node = 3, cpus_per_task = 48 })
    assert.truthy(r.reject and r.reject:find("nearest valid: --ntasks-per-node=2", 1, true), r.reject)
  end)
end)

describe("internal errors", function()
  local M
  before_each(function() M = load_policy(SITE) end)

  local function boom() error("synthetic failure") end

  it("reject a job that asked for the plugin, telling the user", function()
    local job = fake.job({ opt("lwk") })
    assert.are.equal(slurm.ERROR, M.guard(boom, job, PARTS))
    assert.truthy(fake.user[1]:find("^lwk: the site's job_submit.lua policy failed"))
  end)

  it("reject a job in a die-granular partition", function()
    assert.are.equal(slurm.ERROR, M.guard(boom, fake.job({}, { partition = "batch" }), PARTS))
  end)

  it("reject a job that lands in a die-granular default partition, or asks a die feature", function()
    local parts = { batch = { flag_default = 1 } }
    assert.are.equal(slurm.ERROR, M.guard(boom, fake.job({}), parts))
    assert.are.equal(slurm.ERROR, M.guard(boom, fake.job({}, { features = "dies" }), PARTS))
  end)

  it("never block a job outside the policy", function()
    assert.are.equal(slurm.SUCCESS, M.guard(boom, fake.job({ "FOO=bar" }, { partition = "plain" }), PARTS))
    assert.are.equal(slurm.SUCCESS, M.guard(boom, fake.job({}), PARTS))
    assert.are.equal(0, #fake.user)
    assert.truthy(fake.logs[1]:find("internal error"))
  end)

  it("a field slurmctld refuses to give is an internal error, not a crash", function()
    local job = setmetatable({ partition = "batch" }, { __index = function(_, k)
      if k == "num_tasks" then error("unreadable") end
    end })
    assert.are.equal(slurm.ERROR, slurm_job_submit(job, PARTS, 0))
  end)
end)
