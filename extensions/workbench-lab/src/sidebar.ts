/**
 * The left-sidebar list of kernel folders and their stored sessions, each kernel with a
 * button that opens its tuning panel notebook.
 *
 * Readable at the sidebar's default width: a session is two lines (shape · dtype, best
 * time, speedup; then when it started and its status) in a grid whose text column shrinks
 * before the numbers do, so the speedup is never clipped. Sessions without a trial are
 * folded under one line. The last index is kept in localStorage and drawn at once on the
 * next start while a fresh one loads; refreshes never overlap and redraw only on change.
 */
import { PageConfig } from '@jupyterlab/coreutils';
import { Widget } from '@lumino/widgets';

import { IKernelIndex, IKernelSummary, ISessionSummary, requestAPI } from './api';

/** Seconds between refreshes while the sidebar is visible. */
const REFRESH_S = 15;
/** Where the last index is kept between page loads (one per server base URL). */
const CACHE_KEY = 'kernel-workbench-lab:index:';

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

export function formatUs(us: number | null): string {
  if (us === null) {
    return '—';
  }
  return us >= 100 ? `${us.toFixed(1)} µs` : `${us.toFixed(2)} µs`;
}

/** "2026-11-26T18:30:12" -> "11-26 18:30" (the year is in the tooltip). */
function shortDate(created: string): string {
  const text = created.replace('T', ' ');
  return /^\d{4}-/.test(text) ? text.slice(5, 16) : text.slice(0, 16);
}

/** A session that measured nothing: folded away unless asked for. */
export function isEmpty(session: ISessionSummary): boolean {
  return session.trials === 0 && session.best_us === null;
}

export class KernelSidebar extends Widget {
  constructor(
    private readonly openPanel: (kernelPath: string) => Promise<void>,
    private readonly cacheKey: string = CACHE_KEY + PageConfig.getBaseUrl()
  ) {
    super();
    this.id = 'workbench-kernels';
    this.addClass('wb-lab-sidebar');
    this.title.caption = 'Kernel Workbench: kernels and sessions';
    const head = element('div', 'wb-lab-head');
    head.appendChild(element('span', 'wb-lab-title', 'Kernel Workbench'));
    const refresh = element('button', 'wb-lab-refresh jp-Button', 'Refresh');
    refresh.onclick = () => void this.refresh();
    head.appendChild(refresh);
    this.node.appendChild(head);
    this.status = element('div', 'wb-lab-status');
    this.node.appendChild(this.status);
    this.list = element('div', 'wb-lab-kernels');
    this.node.appendChild(this.list);
    const cached = this.readCache();
    if (cached !== null) {
      this.render(cached, true);
    } else {
      this.status.textContent = 'loading…';
    }
    // Fetch once at start, before the sidebar is first shown: by then the list is there.
    void this.refresh();
  }

  /** Fetch the index from the server and redraw (one request at a time). */
  async refresh(): Promise<void> {
    if (this.inFlight) {
      return this.inFlight;
    }
    this.node.classList.add('wb-lab-refreshing');
    this.inFlight = (async () => {
      try {
        const index = await requestAPI<IKernelIndex>('kernels');
        this.render(index, false);
        this.writeCache(index);
      } catch (error) {
        this.status.textContent = String(error);
        this.status.classList.add('wb-lab-error');
      } finally {
        this.node.classList.remove('wb-lab-refreshing');
        this.inFlight = null;
      }
    })();
    return this.inFlight;
  }

  protected onAfterShow(): void {
    void this.refresh();
    window.clearInterval(this.timer);
    this.timer = window.setInterval(() => void this.refresh(), REFRESH_S * 1000);
  }

  protected onAfterHide(): void {
    window.clearInterval(this.timer);
  }

  private readCache(): IKernelIndex | null {
    try {
      const text = window.localStorage.getItem(this.cacheKey);
      const index = text ? (JSON.parse(text) as IKernelIndex) : null;
      return index && Array.isArray(index.kernels) ? index : null;
    } catch {
      return null;
    }
  }

  private writeCache(index: IKernelIndex): void {
    try {
      window.localStorage.setItem(this.cacheKey, JSON.stringify(index));
    } catch {
      // storage full or disabled: the next start waits for the server
    }
  }

  private render(index: IKernelIndex, cached: boolean): void {
    this.status.classList.remove('wb-lab-error');
    const count = index.kernels.length;
    this.status.textContent =
      `${count} kernel folder${count === 1 ? '' : 's'} · store ${index.store}` +
      (cached ? ' · from the last visit, refreshing…' : '') +
      (index.problems.length ? ` · ${index.problems.join('; ')}` : '');
    this.node.dataset.source = cached ? 'cache' : 'server';
    const drawn = JSON.stringify(index.kernels);
    if (drawn === this.drawn) {
      return; // unchanged: keep the DOM (and an open fold) as it is
    }
    this.drawn = drawn;
    this.list.replaceChildren(...index.kernels.map(k => this.kernelNode(k)));
  }

  private kernelNode(kernel: IKernelSummary): HTMLElement {
    const node = element('div', 'wb-lab-kernel');
    node.dataset.kernel = kernel.name;
    node.dataset.path = kernel.path;
    const head = element('div', 'wb-lab-kernel-head');
    const name = element('span', 'wb-lab-kernel-name', kernel.name);
    name.title = kernel.name;
    head.appendChild(name);
    const open = element('button', 'wb-lab-open jp-Button', 'Open panel');
    open.title = `Open a tuning panel notebook for ${kernel.path}`;
    const failed = element('div', 'wb-lab-open-error wb-lab-error',
      this.openErrors.get(kernel.path) ?? '');
    failed.hidden = !this.openErrors.has(kernel.path);
    open.onclick = () => {
      open.disabled = true;
      open.textContent = 'Opening…';  // at once: the notebook and its kernel take seconds
      this.openErrors.delete(kernel.path);
      failed.hidden = true;
      this.openPanel(kernel.path)
        .catch(error => {
          // kept beside its kernel (a refresh redraws the status line, not this)
          this.openErrors.set(kernel.path, String(error));
          const shown = this.list.querySelector(
            `.wb-lab-kernel[data-path="${CSS.escape(kernel.path)}"] .wb-lab-open-error`);
          for (const target of new Set([failed, shown])) {
            if (target) {
              target.textContent = String(error);
              (target as HTMLElement).hidden = false;
            }
          }
        })
        .finally(() => {
          open.disabled = false;
          open.textContent = 'Open panel';
        });
    };
    head.appendChild(open);
    node.appendChild(head);
    node.appendChild(failed);
    // A folder outside the lab's root (e.g. $WORKBENCH_KERNELS) is named by its last parts.
    const shown = kernel.path.startsWith('../')
      ? `…/${kernel.path.split('/').slice(-2).join('/')}` : kernel.path;
    const path = element('div', 'wb-lab-kernel-path', shown);
    path.title = kernel.path;
    node.appendChild(path);
    const measured = kernel.sessions.filter(s => !isEmpty(s));
    const empty = kernel.sessions.filter(isEmpty);
    if (!measured.length && !empty.length) {
      node.appendChild(element('div', 'wb-lab-empty', 'no stored session yet'));
      return node;
    }
    const sessions = element('div', 'wb-lab-sessions');
    if (measured.length) {
      const header = element('div', 'wb-lab-sessions-head');
      for (const label of ['shape · dtype', 'best', 'speedup']) {
        header.appendChild(element('span', '', label));
      }
      sessions.appendChild(header);
      for (const session of measured) {
        sessions.appendChild(this.sessionNode(session));
      }
    }
    if (empty.length) {
      const fold = element('details', 'wb-lab-empty-sessions');
      const count = empty.length;
      fold.appendChild(element('summary', 'wb-lab-empty-count',
        `${count} session${count === 1 ? '' : 's'} without trials`));
      for (const session of empty) {
        fold.appendChild(this.sessionNode(session));
      }
      sessions.appendChild(fold);
    }
    node.appendChild(sessions);
    return node;
  }

  private sessionNode(session: ISessionSummary): HTMLElement {
    const row = element('div', 'wb-lab-session');
    row.dataset.session = session.id;
    const problem = element('span', 'wb-lab-problem');
    if (session.best_problem) {
      const [shape, dtype] = session.best_problem.split('/');
      problem.appendChild(element('span', 'wb-lab-shape', shape));
      problem.appendChild(element('span', 'wb-lab-dtype', dtype ?? ''));
      problem.title = `shape ${shape}, dtype ${dtype ?? '?'}`;
    } else {
      problem.appendChild(element('span', 'wb-lab-shape', '—'));
    }
    row.appendChild(problem);
    const best = element('span', 'wb-lab-best', formatUs(session.best_us));
    best.title = [session.best_problem ?? '', session.pick_note ?? ''].filter(Boolean)
      .join(': ');
    row.appendChild(best);
    const speedup = element('span', 'wb-lab-speedup',
      session.speedup === null ? '—' : `${session.speedup.toFixed(2)}×`);
    speedup.title = session.speedup_note;
    row.appendChild(speedup);
    const meta = element('div', 'wb-lab-session-meta');
    const started = element('span', 'wb-lab-started', shortDate(session.created));
    started.title = `started ${session.created.replace('T', ' ')} (session ${session.id})`;
    meta.appendChild(started);
    meta.appendChild(element('span', 'wb-lab-session-status', session.status));
    if (session.decided) {
      meta.appendChild(element('span', 'wb-lab-decided', session.decided));
    }
    row.appendChild(meta);
    return row;
  }

  private readonly status: HTMLElement;
  private readonly list: HTMLElement;
  private readonly openErrors = new Map<string, string>();  // kernel path -> last failure
  private inFlight: Promise<void> | null = null;
  private drawn = '';
  private timer = 0;
}
