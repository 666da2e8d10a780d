import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { addContextPack, decodePackFile, findContextPack, listContextPacks, PACK_NAME, PACK_VERSION, removeContextPack, type ContextPackInfo } from '../cachelab/context-packs.js';
import { readCacheMetrics } from '../cachelab/report.js';
import { AppError } from '../core/errors.js';
import { defineCommand, requirePersonOrAllowed } from './table.js';

export const getCacheMetrics = defineCommand({
  name: 'get_cache_metrics',
  description: 'Prompt-cache hit rates: overall, per cohort, over time.',
  input: z.strictObject({
    window_min: z.number().int().min(1).max(7 * 24 * 60).optional(),
    target: z.number().gt(0).max(1).optional().describe('hit rate, default 0.9'),
  }),
  readOnly: true,
  handler(ctx, input) {
    return readCacheMetrics(ctx.engine, { windowMs: input.window_min === undefined ? undefined : input.window_min * 60_000, target: input.target });
  },
});

export const addContextPackCommand = defineCommand({
  name: 'add_context_pack',
  description: 'Store a named, versioned context pack (≤ 32 KiB UTF-8 text, no credentials); shown only as name + hash + bytes.',
  input: z.strictObject({
    name: z.string().min(1).max(64).regex(PACK_NAME, 'letters, digits, . _ -'),
    version: z.string().min(1).max(32).regex(PACK_VERSION, 'letters, digits, . _ + -'),
    text: z.string().max(256 * 1024).optional().describe('the pack text'),
    file: z.string().min(1).max(4096).optional().describe('absolute path of a UTF-8 file to read instead of text'),
  }),
  readOnly: false,
  handler(ctx, input): ContextPackInfo & { created: boolean } {
    if ((input.text === undefined) === (input.file === undefined)) throw new AppError('invalid_input', 'text: give exactly one of text or file', { field: 'text' });
    let text = input.text;
    if (input.file !== undefined) {
      if (!isAbsolute(input.file)) throw new AppError('invalid_input', `file: must be an absolute path, got "${input.file}"`, { field: 'file' });
      let buf: Buffer;
      try {
        buf = readFileSync(input.file);
      } catch (e) {
        throw new AppError('invalid_input', `file: cannot read ${input.file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { field: 'file' });
      }
      if (buf.length > 256 * 1024) throw new AppError('invalid_input', `file: ${input.file} is ${buf.length} bytes; a context pack is at most 32 KiB`, { field: 'file' });
      text = decodePackFile(buf);
    }
    return ctx.engine.write(() => addContextPack(ctx.engine.db, input.name, input.version, text!));
  },
});

export const listContextPacksCommand = defineCommand({
  name: 'list_context_packs',
  description: 'Context packs: name, version, hash and bytes of every stored version.',
  input: z.strictObject({}),
  readOnly: true,
  handler(ctx): { packs: ContextPackInfo[] } {
    return { packs: listContextPacks(ctx.engine.db) };
  },
});

export const getContextPack = defineCommand({
  name: 'get_context_pack',
  description: 'One context pack by name (newest version) or name@version: hash, bytes and its versions; its text only when asked (text: true).',
  input: z.strictObject({ name: z.string().min(1).max(97), text: z.boolean().optional().describe('also return the pack text (for a person reviewing it)') }),
  readOnly: true,
  handler(ctx, input): ContextPackInfo & { versions: ContextPackInfo[]; text?: string } {
    const pack = findContextPack(ctx.engine.db, input.name);
    if (!pack) throw new AppError('not_found', `context pack "${input.name}" not found`, { field: 'name' });
    const { text, ...info } = pack;
    return { ...info, versions: listContextPacks(ctx.engine.db).filter((p) => p.name === pack.name), ...(input.text ? { text } : {}) };
  },
});

export const removeContextPackCommand = defineCommand({
  name: 'remove_context_pack',
  description: 'Remove one version (name@version) or every version (name) of a context pack; refused while a task that has not ended is pinned to it.',
  input: z.strictObject({ name: z.string().min(1).max(97) }),
  readOnly: false,
  handler(ctx, input): { removed: ContextPackInfo[]; endedTasks: number } {
    // Packs are shared reference text for every task: removing one is the person's call, like settings.
    requirePersonOrAllowed(ctx, 'removing a context pack');
    return ctx.engine.write(() => removeContextPack(ctx.engine.db, input.name));
  },
});

export const CACHELAB_COMMANDS = [getCacheMetrics, addContextPackCommand, listContextPacksCommand, getContextPack, removeContextPackCommand];
