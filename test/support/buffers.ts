/** Helpers for end-to-end tests of the file tools on live buffers. */
import type { TestNvim } from './nvim';

export interface ToolCallResult {
  ok: boolean;
  data?: Record<string, unknown>;
  error?: { kind: string; message: string; suggestedAction?: string };
}

export interface BufferState {
  lines: string[];
  modified: boolean;
}

/** Runs a tool as the user would (`require('caboose').tool_call`): no model, no approval. */
export const toolCall = (t: TestNvim, name: string, args: unknown) =>
  t.lua<ToolCallResult>("return require('caboose').tool_call(...)", [name, args]);

/** Lines and 'modified' of the loaded buffer named `abs`, or null. */
export const bufferOf = (t: TestNvim, abs: string) =>
  t.lua<BufferState | null>(
    `local p = ...
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) and vim.api.nvim_buf_get_name(b) == p then
        return { lines = vim.api.nvim_buf_get_lines(b, 0, -1, false), modified = vim.bo[b].modified }
      end
    end
    return nil`,
    [abs],
  );
