import type { Migration } from './index.js';

export const m001Initial: Migration = {
  name: '001-initial',
  up(db) {
    db.exec(`
      CREATE TABLE tasks (
        id               TEXT PRIMARY KEY,
        root_id          TEXT NOT NULL,
        parent_id        TEXT REFERENCES tasks(id),
        name             TEXT NOT NULL,
        kind             TEXT NOT NULL CHECK (kind IN ('plan','explore','review','execute')),
        objective        TEXT NOT NULL,
        workspace        TEXT NOT NULL,
        base_ref         TEXT,
        worker           TEXT NOT NULL,
        model            TEXT,
        reasoning_effort TEXT CHECK (reasoning_effort IN ('low','medium','high','xhigh')),
        profile          TEXT,
        gateway          TEXT,
        mode             TEXT NOT NULL CHECK (mode IN ('plan_only','auto_readonly','auto_execute')),
        type             TEXT CHECK (type IN ('chore','feature','hotfix','refactor')),
        priority         INTEGER NOT NULL DEFAULT 50,
        timeout_s        INTEGER NOT NULL,
        allowed_paths    TEXT NOT NULL DEFAULT '[]',
        success_criteria TEXT NOT NULL DEFAULT '[]',
        verify           TEXT NOT NULL DEFAULT '[]',
        context_pack     TEXT,
        metadata         TEXT NOT NULL DEFAULT '{}',
        depth            INTEGER NOT NULL DEFAULT 0,
        status           TEXT NOT NULL,
        attempt          INTEGER NOT NULL DEFAULT 1,
        approved_at      INTEGER,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        blocked_by       TEXT,
        runner_id        TEXT,
        pid              INTEGER,
        pid_start        TEXT,
        worktree_path    TEXT,
        branch           TEXT,
        session_id       TEXT,
        input_tokens     INTEGER NOT NULL DEFAULT 0,
        cached_tokens    INTEGER NOT NULL DEFAULT 0,
        output_tokens    INTEGER NOT NULL DEFAULT 0,
        cost_usd         REAL,
        result           TEXT,
        schema_valid     INTEGER,
        error_code       TEXT,
        error_message    TEXT,
        created_at       INTEGER NOT NULL,
        updated_at       INTEGER NOT NULL,
        started_at       INTEGER,
        ended_at         INTEGER
      );
      CREATE INDEX tasks_dispatch ON tasks(status, priority DESC, id);
      CREATE INDEX tasks_root ON tasks(root_id);
      CREATE INDEX tasks_parent ON tasks(parent_id);

      CREATE TABLE task_deps (
        task_id    TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        depends_on TEXT NOT NULL REFERENCES tasks(id),
        PRIMARY KEY (task_id, depends_on)
      ) WITHOUT ROWID;
      CREATE INDEX task_deps_rev ON task_deps(depends_on, task_id);

      CREATE TABLE attempts (
        task_id    TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        attempt    INTEGER NOT NULL,
        runner_id  TEXT,
        status     TEXT NOT NULL,
        pid        INTEGER,
        pid_start  TEXT,
        exit_code  INTEGER,
        error_code TEXT,
        started_at INTEGER NOT NULL,
        ended_at   INTEGER,
        PRIMARY KEY (task_id, attempt)
      );

      -- Append-only: each row carries the hash of the previous row (audit verify walks the chain).
      CREATE TABLE events (
        seq       INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id   TEXT,
        type      TEXT NOT NULL,
        ts        INTEGER NOT NULL,
        payload   TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash      TEXT NOT NULL
      );
      CREATE INDEX events_task ON events(task_id, seq);

      -- The latest hash, so that deleting the newest events is detected too.
      CREATE TABLE audit_head (
        id   INTEGER PRIMARY KEY CHECK (id = 1),
        seq  INTEGER NOT NULL,
        hash TEXT NOT NULL
      );

      CREATE TABLE leases (
        name        TEXT PRIMARY KEY,
        holder      TEXT NOT NULL,
        pid         INTEGER NOT NULL,
        pid_start   TEXT,
        hostname    TEXT,
        acquired_at INTEGER NOT NULL,
        heartbeat_at INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL
      );

      -- The caller's original text where redaction changed it, encrypted with the home's key file;
      -- only the runner decrypts it, so workers and verify commands get the real text.
      CREATE TABLE task_secrets (
        task_id    TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
        ciphertext BLOB NOT NULL
      );

      CREATE TABLE settings (
        key        TEXT PRIMARY KEY,
        value      TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      );
    `);
  },
};
