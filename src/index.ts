/** caboose.nvim host library: the workspace file layer and its tools. */
export { openWorkspace, FileToolRegistry, type OpenWorkspaceOptions, type OpenedWorkspace } from './tools/open';
export { FileWorkspace, fileWorkspace, type Workspace, type WorkspaceOptions } from './workspace/workspace';
export type { BufferBridge, BufferSnapshot, BufferFormat, BufferOp, BufferOpResult } from './workspace/buffer-bridge';
export type { FileChange } from './workspace/commit-disk';
export type { FileView } from './workspace/file-view';
export type { CommitReport } from './workspace/file-access';
export { verifyAuditLog, auditRowHash, AUDIT_GENESIS_HASH, type AuditEntry, type AuditVerification, type AuditRow, type TrashEntry } from './store';
export { FILE_TOOLS } from './tools/file-tools';
export { ToolRegistry } from './tools/registry';
export { ERROR_KINDS, ToolError, type ErrorKind, type ToolErrorInfo } from './workspace/errors';
export type { ToolResult, ToolSpec, ToolDefinition, ToolContext } from './tools/tool';
