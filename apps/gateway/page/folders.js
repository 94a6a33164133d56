// The workspace folder a new session works in: offered next to "New session" only when the
// bridge serves more than one (a multi-root workspace; `bb.init`'s `folders`, the default
// first), and sent as `bb.createSession`'s `folder`.

let select = null;

/** Shows the folder choice for `folders` (hidden for fewer than two). */
export function offerFolders(folders) {
  const list = Array.isArray(folders) ? folders.filter((f) => typeof f === 'string' && f !== '') : [];
  if (list.length < 2) {
    select?.remove();
    select = null;
    return;
  }
  const anchor = document.querySelector('[data-testid="new-session"]');
  if (!anchor) return;
  if (!select) {
    select = document.createElement('select');
    select.dataset.testid = 'new-session-folder';
    select.setAttribute('aria-label', 'Folder of the new session');
    anchor.after(select);
  }
  const kept = select.value;
  select.replaceChildren(...list.map((folder) => {
    const option = document.createElement('option');
    option.value = folder;
    option.title = folder;
    option.textContent = folder.split(/[\\/]/).filter(Boolean).pop() ?? folder;
    return option;
  }));
  if (list.includes(kept)) select.value = kept;
}

/** `bb.createSession`'s `folder`, when a choice is offered. */
export function folderParams() {
  return select ? { folder: select.value } : {};
}
