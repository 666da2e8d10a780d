/** The documented config.toml `lightworker init` writes: every key optional, the defaults shown. */
export const CONFIG_TEMPLATE = `# LightWorker configuration. Every key is optional; the values shown are the defaults.
# Edit and restart (or run \`lightworker doctor\`) to validate.

[scheduler]
max_concurrency = 4        # tasks running at once on this machine
per_repository = 3        # at most this many per git repository
per_root = 2              # at most this many per task tree (root)
lease_ttl_ms = 3000       # leader lease; a standby takes over this long after the leader stops renewing
kill_grace_ms = 5000      # SIGTERM, then SIGKILL after this grace
default_worker = "mock"   # worker used when a task names none
auto_resume_orphans = true # a task orphaned by its runner's loss resumes by itself (read-only kinds anywhere,
                           # execute only on the host with its worktree); never counted in retry_budget
min_free_mib = 512        # start a worker only while this much memory plus its measured footprint is available (0: off)

[approvals]
default_mode = "auto_readonly"  # plan_only | auto_readonly | auto_execute
allow_mcp = false               # let MCP clients and workers approve, accept and run auto_execute (by default only a person can)

[limits]
max_depth = 1                   # how deep a worker-started task may delegate (LIGHTWORKER_DEPTH)
retry_budget = 3                # retries per task tree
mcp_mutations_per_minute = 60
maximum_follow_up_turns = 20    # follow-ups into one task's session

# What one task may spend, counted live from its worker's events over all its attempts (unset: no limit).
# Each value is also the ceiling for MCP hosts and workers: they may lower it, never raise it.
[budgets]
# max_tokens = 2000000         # input + output tokens
# max_cost_usd = 5.0           # priced from [prices] (else what the worker reports)
# max_turns = 20               # worker turns, auto-repairs and follow-ups included
# max_wall_s = 3600            # time the task's runs took, waits for a person excluded
# root_max_tokens = 10000000   # the same summed over a whole task tree (root_max_cost_usd, root_max_turns too)
on_exceeded = "ask"            # ask: the task waits ("raise it or stop"); fail: it ends budget_exceeded

# A worker failing for infrastructure reasons (crash on start, auth, 5xx, unparsable output) this many
# times in a row takes no new task for cooldown_s, doubling each time it opens again; one probe task closes it.
# A gateway's faults (5xx, refused auth), met by any worker routed through it, open its own breaker the same way.
[breaker]
failures = 5
cooldown_s = 60
max_cooldown_s = 3600

[models]
allow = ["gpt-5.5", "gpt-5.5-mini", "claude-sonnet-4-5", "claude-haiku-4-5", "mock-model"]
fast = "gpt-5.5-mini"           # reasoning_effort = low
reasoning = "gpt-5.5"           # every other effort
# [models.per_worker.claude-code]   # effort routing for one worker (default shown)
# fast = "claude-haiku-4-5"
# reasoning = "claude-sonnet-4-5"

# [profiles.deep_worker]
# model = "gpt-5.5"
# reasoning_effort = "high"
# kinds = ["execute", "review"]
# cost = 40                 # rank, lower = cheaper (built-ins: fast_worker 10, reviewer 20, planner 30, deep_worker 40)

[routing]
escalation = ["fast_worker", "deep_worker"]   # retry --strategy deeper_profile: the next profile here
types = { chore = "cheapest" }                # workflow type -> profile, or "cheapest" adequate by cost

# [gateways.local]
# base_url = "http://127.0.0.1:8080/v1"
# key_env = "LOCAL_GATEWAY_KEY"   # the name of the variable; the key itself is never stored
# auth = "bearer"                  # or "x-api-key"; unset: the worker's own style
# model_map = { "claude-sonnet-4-5" = "glm-4.6" }   # our model name -> the provider's

# How a built-in worker authenticates (default: auto = gateway key when the task names a
# gateway, else your CLI login, else the CLI's own key variables):
# [workers.codex]
# auth = "login"             # login | env | gateway | none
# keys = ["MY_EXTRA_KEY"]    # extra variables passed with auth = "env"
# inherit_base_url = false   # true: honour an exported OPENAI_BASE_URL / ANTHROPIC_BASE_URL

# [workers.myagent]
# command = ["myagent", "run", "--prompt-file", "{prompt_file}"]   # no prompt placeholder: the prompt on stdin
# resume = ["myagent", "resume", "{session}", "--prompt-file", "{prompt_file}"]
# ({prompt} puts the prompt itself in argv, which every local user can read: avoid it)
# version = ["myagent", "--version"]  # how \`workers\`/\`doctor\` ask its version (without it: "version unknown")
# read_only_sandbox = false   # true only if it enforces read-only itself (read-only tasks then run in place)
# [workers.codex]                  # a built-in CLI (codex, claude-code, opencode) outside PATH:
# command = ["/opt/codex/bin/codex"] # its binary (+ leading args); the adapter adds its own arguments

# Any other agent speaking the Agent Client Protocol (ACP) over stdio, by its argv (built in by name:
# gemini, claude-acp, codex-acp, opencode-acp, qwen, copilot):
# [workers.goose]
# acp = ["goose", "acp"]
# [workers.kiro]
# acp = ["kiro-cli", "acp"]
# [workers.auggie]
# acp = ["auggie", "--acp"]

# The vscode worker (the LightWorker Bridge extension in VS Code, vscode-extension/):
# [workers.vscode]
# bridge = "/home/me/.lightworker/vscode-bridge/0123456789abcdef.json"  # default: the live editor with the repo open
# agent = "claude-code"            # or "codex"; default: the first whose extension CLI is there

[worktrees]
ttl_hours = 72

# Delete ended task trees automatically (what lightworker gc --older-than 30d --apply does), from the
# leader: rows, events, artifacts, worktrees; each leaves a signed tombstone in the event log. Off by
# default: deleting is for good. Trees holding unaccepted, unmerged work are always kept.
# [retention]
# enabled = true
# older_than = "30d"
# interval_s = 3600        # how often the leader looks
# max_trees = 200          # trees per pass

# Per-repository worktree setup; overrides the repository's own .lightworker/setup.toml.
# [setup."/abs/path/to/repo"]
# copy = ["config/local.json", ".env.test"]   # ignored files to copy in (.env* only when named)
# setup = ["npm", "ci"]                        # argv, or a shell string you write yourself
# setup_timeout_s = 600

# Read-only tasks of workers without an enforced read-only sandbox run in a disposable snapshot
# (HEAD + your uncommitted changes); a folder that is not a git repository is worked on in a copy.
# [isolation]
# readonly = "auto"          # or "snapshot": every read-only task in a snapshot
# snapshot_pool = 2          # clean snapshots kept per repository for reuse
# [isolation.copy]
# max_bytes = 268435456
# max_files = 20000
# ignore = ["node_modules", ".venv", "venv", "__pycache__", "build", "dist", "target", ".git", ".hg", ".svn", ".DS_Store"]

[verify]
auto_repair = 1                 # repair turns after a failed verification; a task's metadata.auto_repair (0-5) overrides
timeout_s = 600

[output]
max_events = 2000               # worker output events (messages, tool calls) stored per task attempt; the rest is counted
raw_log_bytes = 8388608         # each turn's stdout.jsonl keeps its first and last halves of this size

[requests]
expiry_s = 86400                # a question or permission request unanswered this long fails its task
permission = "ask"              # ask | deny: a worker's permission request (never granted automatically)
question = "ask"                # ask | deny: a worker's question
# [requests.kinds.review]       # per kind; [requests.profiles.NAME] per profile (wins)
# permission = "deny"

# [git]
# author = "Your Name <you@example.com>"   # task commits' author (default: the repository's user.name/email)

[notifications]
approvals = true
failures = true
completions = false
requests = true                 # a task's question or permission request

# Prices for cost estimates, USD per million tokens (cached = prompt-cache reads; defaults to input).
# Built-in defaults cover the default models; a [prices."model"] here overrides or adds one.
# [prices."gpt-5.5"]
# input = 1.25
# cached = 0.125
# output = 10.0

# Pull requests (lightworker pr ID): the remote a task's branch is pushed to, and the watch while open.
# [pr]
# remote = "origin"          # its URL says which forge: github.com, gitlab.com, or a [forges.NAME] below
# draft = true               # open pull requests as drafts
# max_fix_rounds = 2         # failing checks / new review comments sent back to the agent, per pull request
# poll_s = 30                # first poll interval; doubles while nothing changes, up to max_poll_s
# max_poll_s = 600
# log_tail_bytes = 8192      # of a failing check's log, sent to the agent
# GitHub Enterprise, self-hosted GitLab, Gitea/Forgejo. Tokens never go here: token_env names the variable.
# (github.com: GITHUB_TOKEN, GH_TOKEN or gh auth token; gitlab.com: GITLAB_TOKEN.)
# [forges.work]
# kind = "github"            # github | gitlab | gitea
# match = "github.example.com"                   # the remote's host, or a prefix of its URL
# api_url = "https://github.example.com/api/v3"  # GitLab: https://HOST/api/v4; Gitea: https://HOST/api/v1
# token_env = "GHE_TOKEN"
# repo = "owner/name"        # only when the remote URL does not show it

# [editor]
# command = ["code", "--new-window", "{path}"]   # default: $VISUAL, else $EDITOR, else code

# A fleet: every host points at one PostgreSQL (default: the SQLite file in this home).
# LIGHTWORKER_DATABASE_URL=postgres://user:pass@db/lw overrides these; never put a password here.
# [store]
# url = "postgres://lightworker@db.internal:5432/lightworker"   # password: PGPASSWORD or url_file
# url_file = "/etc/lightworker/database-url"                   # a file holding the whole URL
# key_file = "/etc/lightworker/secret.key"                     # 32 bytes, the same on every host (seals secrets)
# schema = "lightworker"
# check_interval_s = 60       # SQLite: a leader's integrity check (quick_check) every this many seconds
# [fleet]
# host_id = "build-box-1"     # this host in the fleet (default: its hostname)
# repos = { "github.com/acme/api" = "/srv/src/api" }           # repositories this host runs tasks for
# max_concurrency = 64        # tasks running at once across the fleet
# lease_ttl_ms = 10000        # a runner silent this long is lost; its tasks are orphaned
`;
