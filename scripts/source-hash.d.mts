// Types of source-hash.mjs, which stays plain JavaScript so that ensure-ready runs before any install.
export declare const sourceRecordFile: string;
export declare function sourceHashes(specDir?: string, root?: string): Record<string, string>;
