// The prompt protocol lives with the Cache Lab (main/cachelab/prompt.ts); the runner builds prompts here.
export { buildPrompt, buildRepairPrompt, PROMPT_PROTOCOL, type BuiltPrompt, type PromptOptions } from '../cachelab/prompt.js';
