/** The example shown in the metadata fields: the mock worker's script. */
export const METADATA_HINT = '{"mock": {"sleep_ms": 500}}';

/** Parse the metadata field: undefined when empty, an object, or an error naming the field. */
export function parseMetadata(text: string): { value?: Record<string, unknown>; error?: string } {
  if (!text.trim()) return {};
  try {
    const v = JSON.parse(text) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) return { error: 'metadata: a JSON object, like ' + METADATA_HINT };
    return { value: v as Record<string, unknown> };
  } catch (err) {
    return { error: `metadata: not valid JSON (${(err as Error).message})` };
  }
}
