// The validators the build generates from the host's zod schemas (first-validate-gen.ts) and writes to
// dist/host/first-validators.js; this names their shape for first-main.ts (the module exists only in dist/).
export declare function init(data: unknown): boolean;
export declare function send(data: unknown): boolean;
export declare function mcp(data: unknown): boolean;
