-- memwatch's job_submit script for Slurm (JobSubmitPlugins=lua; slurmctld reads job_submit.lua
-- from the folder of slurm.conf). For a job submitted with --memwatch=WORKLOAD and
-- --memwatch-params (memwatch_spank.so), it asks `memwatch advise` for the daemon's bound and
-- applies the site's policy: a message, --mem set or raised, or the job refused.
--
-- Settings: memwatch-submit.conf beside this script, key = value lines (docs/slurm.md):
--   memwatch = /usr/bin/memwatch    the CLI to call
--   timeout_s = 2                   the hard limit on the call: the scheduler never waits longer
--   policy, node_mem, node_mem.PARTITION, gpu_mem, vary, deadline_ms, query, curve_keys:
--                                   read by `memwatch advise --settings` itself
-- Whatever goes wrong here (no memwatch, no daemon, no model, a timeout), the job is left as
-- submitted; only a job whose own memwatch options are malformed, or that cannot fit under the
-- reject policy, is refused.

local NO_VAL = 4294967294  -- Slurm's "not set" for 32-bit fields

local function script_dir()
  local source = debug.getinfo(1, "S").source
  return (source:match("^@(.*)/[^/]*$")) or "."
end

local SETTINGS = script_dir() .. "/memwatch-submit.conf"

local function read_settings(path)
  local settings = { memwatch = "/usr/bin/memwatch", timeout_s = "2" }
  local file = io.open(path, "r")
  if file == nil then return settings end
  for line in file:lines() do
    local key, value = line:gsub("#.*", ""):match("^%s*([%w_.]+)%s*=%s*(.-)%s*$")
    if key ~= nil then settings[key] = value end
  end
  file:close()
  return settings
end

-- The user's words go to a shell: quote each one whole.
local function quote(word)
  return "'" .. tostring(word):gsub("'", "'\\''") .. "'"
end

-- MEMWATCH_WORKLOAD and MEMWATCH_PARAMS, as memwatch_spank.so put them in the job's control
-- environment ("NAME=value" entries, indexed from 0).
local function memwatch_request(job_desc)
  local env = job_desc.spank_job_env
  local request = {}
  if type(env) ~= "table" then return request end
  for _, entry in pairs(env) do
    local name, value = tostring(entry):match("^(MEMWATCH_[%u_]+)=(.*)$")
    if name ~= nil then request[name] = value end
  end
  return request
end

local function requested_mem_mb(job_desc)
  if job_desc.min_mem_per_node ~= nil then return job_desc.min_mem_per_node end
  if job_desc.min_mem_per_cpu ~= nil then
    local cpus = job_desc.min_cpus
    if cpus == nil or cpus >= NO_VAL or cpus < 1 then cpus = 1 end
    return job_desc.min_mem_per_cpu * cpus
  end
  return nil
end

local function json_field(line, name)
  return line:match('"' .. name .. '":"?([^,"}]*)"?')
end

local function advise(job_desc, request, settings)
  local words = {
    "/usr/bin/timeout", "-k", "1", quote(settings.timeout_s), quote(settings.memwatch), "advise",
    "--settings", quote(SETTINGS),
    "--workload", quote(request.MEMWATCH_WORKLOAD or ""),
    "--params", quote(request.MEMWATCH_PARAMS or ""),
  }
  local mem = requested_mem_mb(job_desc)
  if mem ~= nil then table.insert(words, "--mem-mb " .. quote(string.format("%d", mem))) end
  local tres = {}
  for _, field in ipairs({ "tres_per_node", "tres_per_job", "tres_per_socket", "tres_per_task" }) do
    if job_desc[field] ~= nil then table.insert(tres, job_desc[field]) end
  end
  if #tres > 0 then table.insert(words, "--gres " .. quote(table.concat(tres, ","))) end
  if job_desc.partition ~= nil then
    table.insert(words, "--partition " .. quote(job_desc.partition))
  end
  local pipe = io.popen(table.concat(words, " ") .. " 2>/dev/null")
  if pipe == nil then return nil end
  local line = pipe:read("*l")
  pipe:close()
  return line
end

local function size_job(job_desc)
  local request = memwatch_request(job_desc)
  if request.MEMWATCH_WORKLOAD == nil and request.MEMWATCH_PARAMS == nil then
    return slurm.SUCCESS
  end
  local settings = read_settings(SETTINGS)
  local line = advise(job_desc, request, settings)
  if line == nil or line == "" then
    slurm.log_info("memwatch: advise gave no answer within %s s; job left as submitted",
                   settings.timeout_s)
    return slurm.SUCCESS
  end
  local decision = json_field(line, "decision")
  local message = line:match('"message":"(.*)"}%s*$') or ""
  message = message:gsub('\\"', '"'):gsub("\\\\", "\\")
  if decision == "reject" then
    slurm.log_user("%s", message)
    return slurm.ERROR
  end
  if decision == "set_mem" then
    local mem = tonumber(json_field(line, "mem_mb"))
    if mem ~= nil and mem > 0 then job_desc.pn_min_memory = mem end
  end
  if message ~= "" then slurm.log_user("%s", message) end
  return slurm.SUCCESS
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  -- A mistake in this script must not refuse jobs: it leaves them as submitted.
  local ok, result = pcall(size_job, job_desc)
  if ok then return result end
  slurm.log_error("memwatch: job_submit.lua: %s; job left as submitted", tostring(result))
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

return slurm.SUCCESS
