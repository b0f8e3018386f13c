/** caboose.nvim host library: the workspace file layer and its tools. */
export { openWorkspace, FileToolRegistry, type OpenWorkspaceOptions, type OpenedWorkspace } from './workspace/open';
export { FileWorkspace, fileWorkspace, type Workspace, type WorkspaceOptions } from './workspace/workspace';
export type { BufferBridge, BufferSnapshot, BufferFormat, BufferOp, BufferOpResult, FileChange, FileView, CommitReport } from './workspace/file-access';
export { verifyAuditLog, auditRowHash, AUDIT_GENESIS_HASH, type AuditEntry, type AuditVerification, type AuditRow, type TrashEntry } from './store';
export { FILE_TOOLS } from './tools/file-tools';
export { ToolRegistry } from './tools/registry';
export { ERROR_KINDS, ToolError, type ErrorKind, type ToolErrorInfo } from './tools/errors';
export type { ToolResult, ToolSpec, ToolDefinition, ToolContext } from './tools/tool';
