--- The chat: a transcript buffer (caboose://chat/<n>, markdown, read-only) and below it a message area
--- (caboose://input/<n>, an ordinary buffer: multi-line, undoable, your own mappings). It only displays
--- what the host sends; streamed text arrives in frames and is appended once per frame.
---
--- This is the chat's public API; each part lives in its own file:
---   state.lua       the shared state (buffers, stream, status) every part reads and writes
---   layout.lua      the windows and their life cycle (open, close, sizes, the layout kept whole)
---   transcript.lua  the transcript buffer and the conversation streamed into it
---   text.lua        what each entry reads as (shared with load.lua)
---   thinking.lua    the model's reasoning, folded under its line
---   tools.lua       tool call lines and the folds of their details
---   queue.lua       queued messages shown under the transcript
---   rules.lua       the rules files a conversation follows (its first lines)
---   load.lua        a reopened session's transcript, in one change
---   markdown.lua    treesitter markdown, and the transcript's parser in two parts
---   winbar.lua      the status line and the message area's key hints
---   input.lua       the message area: its buffer, completion, sending
---   keys.lua        the keymaps and the g? list
local layout = require('caboose.chat.layout')
local transcript = require('caboose.chat.transcript')
local input = require('caboose.chat.input')
local keys = require('caboose.chat.keys')
local winbar = require('caboose.chat.winbar')
local tools = require('caboose.chat.tools')
local thinking = require('caboose.chat.thinking')
local queue = require('caboose.chat.queue')
local rules = require('caboose.chat.rules')
local reopened = require('caboose.chat.load')

local M = {}

-- Buffers
M.buf = transcript.buf
M.input_buf = input.input_buf

-- Windows
M.open = layout.open
M.close = layout.close
M.reset = layout.reset
M.resize = layout.resize
M.size = layout.size
M.input_win = layout.input_win
M.focus_input = layout.focus_input

-- Keys
M.show_keys = keys.show_keys
M.yank_code_block = keys.yank_code_block

-- Winbar
M.status_line = winbar.status_line
M.set_status = winbar.set_status
M.status_text = winbar.status_text

-- Transcript (host events)
M.append = transcript.append
M.block = transcript.block
M.lines = transcript.lines
M.user_message = transcript.user_message
M.assistant_start = transcript.assistant_start
M.assistant_delta = transcript.assistant_delta
M.assistant_end = transcript.assistant_end
M.error = transcript.error
M.notice = transcript.notice
M.todos = transcript.todos
M.reasoning_delta = thinking.delta
M._show_thinking = thinking.show
M.thinking_text = thinking.text
M.tool_call = tools.tool_call
M.tool_progress = tools.tool_progress
M.tool_result = tools.tool_result
M.foldtext = tools.foldtext
M.queued = queue.queued
M.queue_discarded = queue.discarded
M.queue = queue.list
M.rules = rules.show
M.rules_lines = rules.lines
M.load = reopened.load

-- Sending
M.submit = input.submit

return M
