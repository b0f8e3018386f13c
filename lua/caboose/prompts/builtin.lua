--- The prompts caboose ships (|caboose-prompts-builtin|). A prompt of the same name in setup({ prompts }),
--- the user's prompt folder or the project's replaces one of these.
return {
  explain = {
    description = 'explain the selection (Visual mode) or the buffer',
    text = table.concat({
      'Explain {{code}}: what it is for, how it works step by step, and anything surprising or risky in it.',
      'Be concise; quote the lines you talk about. Do not change any file.',
    }, '\n'),
  },
  fix = {
    description = "fix the problems the buffer's diagnostics report",
    text = table.concat({
      'Fix the problems that the diagnostics below report in {{code}}.',
      'Change as little as needed, keep the style of the code, and say briefly what each fix does.',
      '',
      '#diagnostics',
    }, '\n'),
  },
  tests = {
    description = 'write tests for the selection (Visual mode) or the buffer',
    text = table.concat({
      'Write tests for {{code}}.',
      "Use the project's existing test framework, folders and conventions (look at its other tests first);",
      'cover the normal cases, the edge cases and the errors, and tell me how to run them.',
    }, '\n'),
  },
  review = {
    description = 'review the unstaged changes (#gitdiff)',
    text = table.concat({
      'Review the changes in the git diff below as a careful senior reviewer would:',
      'bugs, edge cases, security problems, missing tests, unclear names. List the findings by file and line,',
      'most important first; say when something looks fine. Do not change any file.',
      '',
      '#gitdiff',
    }, '\n'),
  },
  commit = {
    description = 'write a commit message for the staged changes (#gitdiff:staged)',
    text = table.concat({
      'Write a git commit message for the staged changes below: a summary line of at most 72 characters in the',
      'imperative mood, a blank line, then a short body saying what changed and why. Reply with the message',
      'only, in a ```gitcommit block. Do not commit and do not change any file.',
      '',
      '#gitdiff:staged',
    }, '\n'),
  },
}
