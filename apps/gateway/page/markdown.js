// Markdown as agents write it (paragraphs, headings, lists, quotes, fenced code, inline code,
// emphasis, links), rendered straight into DOM nodes: text always goes in as text, never as
// HTML, so nothing an engine sends can inject markup. A library (marked, markdown-it) would
// give HTML strings, and with them the need for a sanitizer too.

const SAFE_LINK = /^(https?:|mailto:)/i;

function node(tag, cls, children = []) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  for (const c of children) n.append(c);
  return n;
}

/** Inline markup of one line: `code`, **bold**, *italic* / _italic_, [text](url). */
export function inline(text) {
  const out = [];
  const re = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|(?<![\w])_([^_\s][^_]*)_(?![\w])|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[1]) out.push(node('code', null, [m[2]]));
    else if (m[3] || m[4]) out.push(node('strong', null, inline(m[3] ?? m[4])));
    else if (m[5] || m[6]) out.push(node('em', null, inline(m[5] ?? m[6])));
    else if (m[7]) {
      if (SAFE_LINK.test(m[8])) {
        const a = node('a', null, inline(m[7]));
        a.href = m[8];
        a.target = '_blank';
        a.rel = 'noopener noreferrer';
        out.push(a);
      } else {
        out.push(m[0]);
      }
    }
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** Renders markdown text into a fragment. An unfinished stream renders as far as it goes. */
export function markdown(text) {
  const root = document.createDocumentFragment();
  const lines = text.split('\n');
  let para = [];
  let list = null;
  const flushPara = () => {
    if (para.length) {
      const p = node('p');
      para.forEach((l, i) => {
        if (i) p.append(node('br'));
        p.append(...inline(l));
      });
      root.append(p);
      para = [];
    }
  };
  const flushList = () => {
    if (list) {
      root.append(list.el);
      list = null;
    }
  };
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)\s*$/);
    if (fence) {
      flushPara();
      flushList();
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) {
        body.push(lines[i]);
        i += 1;
      }
      const code = node('code', null, [body.join('\n')]);
      if (fence[2]) code.dataset.lang = fence[2];
      root.append(node('pre', 'code', [code]));
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      flushPara();
      flushList();
      const level = Math.min(6, heading[1].length + 2);
      root.append(node(`h${level}`, null, inline(heading[2])));
      continue;
    }
    const item = line.match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
    if (item) {
      flushPara();
      const ordered = /\d/.test(item[1]);
      if (!list || list.ordered !== ordered) {
        flushList();
        list = { ordered, el: node(ordered ? 'ol' : 'ul') };
      }
      list.el.append(node('li', null, inline(item[2])));
      continue;
    }
    const quote = line.match(/^\s*>\s?(.*)$/);
    if (quote) {
      flushPara();
      flushList();
      root.append(node('blockquote', null, inline(quote[1])));
      continue;
    }
    if (!line.trim()) {
      flushPara();
      flushList();
      continue;
    }
    flushList();
    para.push(line);
  }
  flushPara();
  flushList();
  return root;
}
