// A unified diff as a person reads it: file headers, hunk headers, added lines, removed lines
// and context, each its own line. Text goes in as text.

/** The kind of one line of a unified diff. */
export function lineKind(line) {
  if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff ') || line.startsWith('index ')
    || line.startsWith('new file') || line.startsWith('deleted file')) return 'meta';
  if (line.startsWith('@@')) return 'hunk';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'del';
  if (line.startsWith('…') || line.startsWith('\\')) return 'note';
  return 'ctx';
}

/** Added and removed lines of a diff. */
export function counts(text) {
  let add = 0;
  let del = 0;
  for (const line of text.split('\n')) {
    const k = lineKind(line);
    if (k === 'add') add += 1;
    else if (k === 'del') del += 1;
  }
  return { add, del };
}

/** Renders a unified diff (its `diff --git`/`index` lines left out) as a `<pre>`. */
export function renderDiff(text) {
  const pre = document.createElement('pre');
  pre.className = 'diff';
  for (const line of text.replace(/\n$/, '').split('\n')) {
    const kind = lineKind(line);
    if (kind === 'meta' && (line.startsWith('diff ') || line.startsWith('index '))) continue;
    const span = document.createElement('span');
    span.className = `line ${kind}`;
    span.textContent = line;
    pre.append(span);
  }
  return pre;
}
