import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { AppError } from '../core/errors.js';
import { backupStore } from '../store/backup.js';
import { defineCommand, requirePersonOrAllowed } from './table.js';

export const backupHome = defineCommand({
  name: 'backup_home',
  description: "A consistent copy of the home's store, taken while runners work (SQLite's online backup), checked before it is kept.",
  input: z.strictObject({
    file: z.string().min(1).max(4096),
    force: z.boolean().default(false),
  }),
  readOnly: false,
  async handler(ctx, input) {
    requirePersonOrAllowed(ctx, 'a backup of the store');
    if (!isAbsolute(input.file)) throw new AppError('invalid_input', `file: must be an absolute path, got "${input.file}"`, { field: 'file' });
    return backupStore(ctx.engine.db, input.file, { force: input.force });
  },
});

export const DATA_COMMANDS = [backupHome];
