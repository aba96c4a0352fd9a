// A question before an action that changes something: a modal dialog (the browser's own,
// which keeps the focus inside and closes on Escape) saying what will happen, with the
// action's button and Cancel. Removed from the page once answered.

import { el } from './dom.js';

/** Asks `text` (and whatever `body` adds: fields, a summary) in a dialog with id
 * `${id}-question`; resolves true when `confirm` was pressed (`${id}-confirm`) and `check`
 * (if any) found nothing wrong (else its message is shown and the dialog stays), false on
 * Cancel (`${id}-cancel`) or Escape.
 * @param {{id: string, title: string, text: string | Node, confirm: string, danger?: boolean, body?: Node[], check?: () => string | null}} q
 * @returns {Promise<boolean>} */
export function ask(q) {
  return new Promise((resolve) => {
    const dialog = /** @type {HTMLDialogElement} */ (el('dialog', {
      id: `${q.id}-question`, class: 'confirm-dialog', 'aria-labelledby': `${q.id}-title`, 'aria-describedby': `${q.id}-text`,
    }));
    // Another view asked for (Back, a link): the question is withdrawn, nothing done.
    const away = () => done(false);
    const done = (/** @type {boolean} */ yes) => {
      window.removeEventListener('hashchange', away);
      if (dialog.open) dialog.close();
      dialog.remove();
      resolve(yes);
    };
    window.addEventListener('hashchange', away);
    const problem = el('p', { class: 'problem', id: `${q.id}-problem`, role: 'alert' });
    dialog.append(
      el('h2', { id: `${q.id}-title` }, q.title),
      el('p', { id: `${q.id}-text` }, q.text),
      ...(q.body ?? []),
      problem,
      el('div', { class: 'actions-bar' },
        el('button', {
          type: 'button',
          class: q.danger ? 'danger' : '',
          id: `${q.id}-confirm`,
          onclick: () => {
            const wrong = q.check?.() ?? null;
            if (wrong) problem.textContent = wrong;
            else done(true);
          },
        }, q.confirm),
        el('button', { type: 'button', class: 'secondary', id: `${q.id}-cancel`, onclick: () => done(false) }, 'Cancel')));
    dialog.addEventListener('cancel', (ev) => { ev.preventDefault(); done(false); });
    document.body.append(dialog);
    dialog.showModal();
    /** @type {HTMLElement | null} */ (dialog.querySelector(`#${q.id}-confirm`))?.focus();
  });
}
