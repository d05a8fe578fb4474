// The passphrase lock. While the memory is encrypted and closed, a prompt asks for its passphrase and nothing of the
// conversation is shown; in Settings, the memory is encrypted, its passphrase changed, its encryption removed, or it is
// locked. A passphrase exists only in its field until it is used: read, the field cleared, handed to the worker. The
// demo never keeps it, stores it (IndexedDB, localStorage, the URL) or logs it.
import type { EncryptionOptions } from '../src/contracts/types.js';
import { $, el } from './dom.js';
import { showError, statusEl } from './status.js';

export interface LockHooks {
  /** Opens the memory with this passphrase; rejects with the engine's error (WRONG_KEY for a wrong one). */
  unlock(passphrase: string): Promise<void>;
  /** Encrypts the open memory, changes its passphrase, or (null) decrypts it. */
  rekey(encryption: EncryptionOptions | null): Promise<void>;
  /** Closes the memory and clears everything shown of it; the prompt is shown then (showLock). */
  lock(): Promise<void>;
}

/** How the open memory is kept: encrypted, plain, or in memory only (nothing written, nothing to encrypt). */
export type Encryption = 'encrypted' | 'plain' | 'unavailable';

const prompt = $('lock');
const unlockForm = $<HTMLFormElement>('unlock');
const field = $<HTMLInputElement>('unlock-passphrase');
const unlockButton = $<HTMLButtonElement>('unlock-button');
const unlockError = $('unlock-error');
const form = $<HTMLFormElement>('encryption');
const first = $<HTMLInputElement>('new-passphrase');
const second = $<HTMLInputElement>('repeat-passphrase');
const encrypt = $<HTMLButtonElement>('encrypt');
const decrypt = $<HTMLButtonElement>('remove-encryption');
const lockButton = $<HTMLButtonElement>('lock-now');
const note = $('encryption-note');
const outcome = $('encryption-status');
let state: Encryption = 'plain';

const WHY = 'This memory is encrypted on this device. Enter its passphrase to open it: without it, nothing in it can be read.';
const NOTES: Record<Encryption, string> = {
  encrypted: 'Encrypted at rest with a passphrase: every reload, and "Lock", asks for it. It is not stored anywhere, so without it this memory cannot be opened.',
  plain: 'Not encrypted: anyone with this browser profile can read its files. A passphrase (typed twice, at least 8 characters, stretched with Argon2id) encrypts it in place; it is never stored, so forgetting it loses the memory.',
  unavailable: 'This session runs in memory: nothing is written, so there is nothing to encrypt.',
};

/** The prompt: shown with the field focused, the status line saying the memory is locked. */
export function showLock(why = WHY): void {
  document.body.dataset.lock = 'locked';
  document.body.dataset.encrypted = 'true';
  statusEl.textContent = 'locked · the memory is encrypted: enter its passphrase to open it';
  $('lock-why').textContent = why;
  unlockError.replaceChildren();
  outcome.replaceChildren();
  delete document.body.dataset.rekey;
  prompt.hidden = false;
  field.value = '';
  field.focus();
}

/** The memory is open: the prompt goes, Settings offer what fits how it is kept. */
export function showOpen(how: Encryption): void {
  const wasLocked = !prompt.hidden;
  prompt.hidden = true;
  document.body.dataset.lock = 'open';
  showEncryption(how);
  if (wasLocked) $('input').focus();
}

/** Settings › Encryption as the memory is kept now. */
export function showEncryption(how: Encryption): void {
  state = how;
  document.body.dataset.encrypted = String(how === 'encrypted');
  note.textContent = NOTES[how];
  encrypt.textContent = how === 'encrypted' ? 'Change passphrase' : 'Encrypt with a passphrase';
  for (const e of [first.parentElement!, second.parentElement!, encrypt]) e.hidden = how === 'unavailable';
  decrypt.hidden = lockButton.hidden = how !== 'encrypted';
}

/** What the encryption settings say after a change (or why it was refused), with its state for scripts and tests. */
function say(text: string, result: 'running' | 'done' | 'failed', error?: unknown): void {
  document.body.dataset.rekey = result;
  if (error !== undefined) showError(error, outcome);
  else outcome.replaceChildren(el('span', { className: result === 'failed' ? 'error' : '', textContent: text }));
}

function unlock(hooks: LockHooks): void {
  const passphrase = field.value;
  field.value = '';
  if (!passphrase) { showError({ message: 'Enter the passphrase first.' }, unlockError); field.focus(); return; }
  unlockButton.disabled = true;
  document.body.dataset.lock = 'unlocking';
  unlockError.replaceChildren();
  statusEl.textContent = 'unlocking… (the passphrase is stretched first: a second or so)';
  hooks.unlock(passphrase).catch((e: unknown) => {
    document.body.dataset.lock = 'locked';
    statusEl.textContent = 'locked · the memory is encrypted: enter its passphrase to open it';
    const wrong = (e as { code?: unknown } | null)?.code === 'WRONG_KEY';
    showError(wrong ? { code: 'WRONG_KEY', message: 'That passphrase does not open this memory. Check it (and Caps Lock) and try again.' } : e, unlockError);
    field.focus();
  }).finally(() => { unlockButton.disabled = false; });
}

async function change(hooks: LockHooks, encryption: EncryptionOptions | null, running: string, done: string): Promise<void> {
  const buttons = [encrypt, decrypt, lockButton];
  for (const b of buttons) b.disabled = true;
  say(running, 'running');
  try {
    await hooks.rekey(encryption);
    showEncryption(encryption ? 'encrypted' : 'plain');
    say(done, 'done');
  } catch (e) {
    say('', 'failed', e);
  } finally {
    for (const b of buttons) b.disabled = false;
  }
}

/** Checks the two entries (cleared either way) before anything changes. */
function newPassphrase(): string | null {
  const [a, b] = [first.value, second.value];
  first.value = second.value = '';
  const problem = !a ? 'Type the new passphrase, then the same again below it.'
    : a !== b ? 'The two entries differ: type the same passphrase twice.'
      : [...a].length < 8 ? 'Use at least 8 characters: a few words are easier to remember than symbols.' : null;
  if (!problem) return a;
  say(problem, 'failed');
  first.focus();
  return null;
}

export function setupLock(hooks: LockHooks): void {
  unlockForm.addEventListener('submit', (e) => { e.preventDefault(); unlock(hooks); });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const passphrase = newPassphrase();
    if (passphrase === null) return;
    void (state === 'encrypted'
      ? change(hooks, { passphrase }, 'changing the passphrase…', 'Passphrase changed: the old one no longer opens this memory.')
      : change(hooks, { passphrase }, 'encrypting… (the memory is rewritten sealed)', 'Encrypted: a reload or "Lock" now asks for the passphrase.'));
  });
  decrypt.addEventListener('click', () => { void change(hooks, null, 'removing encryption…', 'Encryption removed: the memory opens without a passphrase.'); });
  lockButton.addEventListener('click', () => {
    $<HTMLDetailsElement>('settings-panel').open = false;
    hooks.lock().catch((e: unknown) => showError(e));
  });
}
