import type { ToolDefinition } from './tool';
import { readFileTool } from './read_file';
import { listDirectoryTool } from './list_directory';
import { globTool } from './glob';
import { grepTool } from './grep';
import { searchFilesTool } from './search_files';
import { createFileTool } from './create_file';
import { writeFileTool } from './write_file';
import { editFileTool } from './edit_file';
import { deleteFileTool } from './delete_file';
import { restoreFileTool } from './restore_file';
import { moveFileTool } from './move_file';
import { applyPatchTool } from './apply_patch';
import { diagnosticsTool } from './diagnostics';

/** The workspace file tools, in the order the model sees them. */
export const FILE_TOOLS: readonly ToolDefinition[] = [
  readFileTool,
  listDirectoryTool,
  globTool,
  grepTool,
  searchFilesTool,
  diagnosticsTool,
  createFileTool,
  writeFileTool,
  editFileTool,
  deleteFileTool,
  restoreFileTool,
  moveFileTool,
  applyPatchTool,
] as unknown as readonly ToolDefinition[];

/** Tools that change files: every attempt is audited. */
export const FILE_WRITE_TOOL_NAMES: ReadonlySet<string> = new Set(
  FILE_TOOLS.filter((t) => t.policy === 'edit').map((t) => t.name),
);
