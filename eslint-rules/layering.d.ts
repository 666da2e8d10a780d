export declare const LAYERS: string[][];
export declare function folderOf(file: string): string | null;
export declare function mayImport(from: string, to: string): boolean;
export declare function importKey(file: string, to: string): string;
declare const plugin: { rules: Record<string, unknown> };
export default plugin;
