export interface FolderImport {
  file: string;
  from: string;
  to: string;
  key: string;
}
export declare function folderImports(root?: string): FolderImport[];
export declare function folderCycles(edges: Pick<FolderImport, 'from' | 'to'>[]): string[];
