import type { TestNvim } from './nvim';

/** The approval float as the user sees it: title and footer (keys) of the window, the buffer's text. */
export interface ApprovalFloat {
  win: number;
  title: string;
  footer: string;
  lines: string[];
  text: string;
  /** Outer position and size (borders included), in screen cells. */
  row: number;
  col: number;
  width: number;
  height: number;
  focused: boolean;
}

/** The approval float, or null when none is shown. */
export function approvalFloat(t: TestNvim): Promise<ApprovalFloat | null> {
  return t.lua<ApprovalFloat | null>(`
    local flat = function(x)
      if type(x) ~= 'table' then return x or '' end
      return table.concat(vim.tbl_map(function(chunk) return chunk[1] end, x))
    end
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      local b = vim.api.nvim_win_get_buf(w)
      local c = vim.api.nvim_win_get_config(w)
      if c.relative ~= '' and vim.bo[b].filetype == 'caboose_approval' then
        local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
        local pos = vim.api.nvim_win_get_position(w)
        return {
          win = w, title = flat(c.title), footer = flat(c.footer), lines = lines, text = table.concat(lines, '\\n'),
          row = pos[1], col = pos[2], width = c.width + 2, height = c.height + 2,
          focused = vim.api.nvim_get_current_win() == w,
        }
      end
    end
    return nil`);
}

/** Waits for the float asking about `tool` (any tool without it). */
export function waitApprovalFloat(t: TestNvim, tool?: string): Promise<ApprovalFloat> {
  return t.waitFor(async () => {
    const f = await approvalFloat(t);
    return f && (tool === undefined || f.title.includes(`approve ${tool}?`)) ? f : null;
  }, tool ? `${tool} approval` : 'approval float');
}
