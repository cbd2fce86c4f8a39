-- SPDX-License-Identifier: GPL-2.0-or-later
-- lua fuzz-values.lua SRCDIR COUNT SEED: COUNT option values made of the
-- grammar's own pieces and of bytes it refuses, each with the verdict of
-- lwk_policy.lua's check_value, as lines of cases.tsv (option, value
-- with every byte outside printable ASCII and '\' written \xNN, ok or
-- refuse, "lwk:").  check_options.c judges them again with the nodes'
-- parser: the two must never disagree.
local srcdir, count, seed = arg[1] or ".", tonumber(arg[2]) or 20000, tonumber(arg[3]) or 1
package.path = srcdir .. "/testsuite/lua/?.lua;" .. package.path
require("fake_slurm").install()
local M = dofile(srcdir .. "/lua/lwk_policy.lua")

local OPTIONS = { "lwk", "sync-monitor", "contention-aware" }
local KEYS = { "os", "mem", "numa", "backend", "hugepage", "deleg_mem", "deleg_cpu",
               "interval", "offset", "dir", "source", "idle", "fullscan", "flush", "buffer",
               "probe", "min_dies", "max_dies", "event", "objective", "OS", "", "x" }
local PIECES = { "0", "1", "2", "9", "10", "64", "100", "1023", "1024", "1025", "3600", "60",
                 "000", "99999999999999999999", "18446744073709551616", "4294967296",
                 "K", "M", "G", "T", "k", "g", "iB", "ib", "B", "b", "I", "us", "ms", "s", "S", "m",
                 "%", ".", ".5", ".25", ".999", "-", ":", "=", ",", ",,", " ", "auto", "none",
                 "linux", "mckernel", "2M", "1G", "taskstats", "proc", "bpf", "antt", "stp",
                 "instructions", "cycles:u", "/tmp/x", "+", "_", "a", "\n", "\t", "\1", "\127",
                 "\195\169", "\255", "(null)", "\\" }

local function piece()
  return PIECES[math.random(#PIECES)]
end

local function value()
  local items = {}
  for _ = 1, math.random(0, 4) do
    local item = KEYS[math.random(#KEYS)]
    if math.random(10) > 1 then item = item .. "=" end
    for _ = 1, math.random(0, 4) do item = item .. piece() end
    items[#items + 1] = item
  end
  local v = table.concat(items, ",")
  if math.random(20) == 1 then v = v .. string.rep(piece(), math.random(100, 1500)) end
  return v
end

local function escape(v)
  return (v:gsub(".", function(c)
    local b = c:byte()
    if b < 32 or b > 126 or b == 92 then return string.format("\\x%02x", b) end
  end))
end

math.randomseed(seed)
for _ = 1, count do
  local option, v = OPTIONS[math.random(#OPTIONS)], value()
  print(option .. "\t" .. escape(v) .. "\t" .. (M.check_value(option, v) and "refuse" or "ok") .. "\tlwk:")
end
