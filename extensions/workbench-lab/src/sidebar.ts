/**
 * The left-sidebar list of kernel folders and their stored sessions (best result, speedup,
 * status), each kernel with a button that opens its tuning panel notebook.
 */
import { Widget } from '@lumino/widgets';

import { IKernelIndex, IKernelSummary, ISessionSummary, requestAPI } from './api';

/** Seconds between refreshes while the sidebar is visible. */
const REFRESH_S = 15;

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function formatUs(us: number | null): string {
  if (us === null) {
    return '—';
  }
  return us >= 100 ? `${us.toFixed(1)} µs` : `${us.toFixed(2)} µs`;
}

export class KernelSidebar extends Widget {
  constructor(private readonly openPanel: (kernelPath: string) => Promise<void>) {
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
  }

  /** Fetch the index from the server and redraw. */
  async refresh(): Promise<void> {
    this.status.textContent = 'loading…';
    try {
      const index = await requestAPI<IKernelIndex>('kernels');
      this.render(index);
    } catch (error) {
      this.status.textContent = String(error);
      this.status.classList.add('wb-lab-error');
    }
  }

  protected onAfterShow(): void {
    void this.refresh();
    this.timer = window.setInterval(() => void this.refresh(), REFRESH_S * 1000);
  }

  protected onAfterHide(): void {
    window.clearInterval(this.timer);
  }

  private render(index: IKernelIndex): void {
    this.status.classList.remove('wb-lab-error');
    const count = index.kernels.length;
    this.status.textContent =
      `${count} kernel folder${count === 1 ? '' : 's'} · store ${index.store}` +
      (index.problems.length ? ` · ${index.problems.join('; ')}` : '');
    this.list.replaceChildren(...index.kernels.map(k => this.kernelNode(k)));
  }

  private kernelNode(kernel: IKernelSummary): HTMLElement {
    const node = element('div', 'wb-lab-kernel');
    node.dataset.kernel = kernel.name;
    const head = element('div', 'wb-lab-kernel-head');
    head.appendChild(element('span', 'wb-lab-kernel-name', kernel.name));
    const open = element('button', 'wb-lab-open jp-Button', 'Open panel');
    open.title = `Open a tuning panel notebook for ${kernel.path}`;
    open.onclick = () => {
      open.disabled = true;
      this.openPanel(kernel.path)
        .catch(error => {
          this.status.textContent = String(error);
          this.status.classList.add('wb-lab-error');
        })
        .finally(() => {
          open.disabled = false;
        });
    };
    head.appendChild(open);
    node.appendChild(head);
    // A folder outside the lab's root (e.g. $WORKBENCH_KERNELS) is named by its last parts.
    const shown = kernel.path.startsWith('../')
      ? `…/${kernel.path.split('/').slice(-2).join('/')}` : kernel.path;
    const path = element('div', 'wb-lab-kernel-path', shown);
    path.title = kernel.path;
    node.appendChild(path);
    if (!kernel.sessions.length) {
      node.appendChild(element('div', 'wb-lab-empty', 'no stored session yet'));
      return node;
    }
    const table = element('table', 'wb-lab-sessions');
    const header = table.createTHead().insertRow();
    for (const label of ['started', 'best', 'speedup']) {
      header.appendChild(element('th', '', label));
    }
    const body = table.createTBody();
    for (const session of kernel.sessions) {
      body.appendChild(this.sessionRow(session));
      const status = element('tr', 'wb-lab-session-status');
      const cell = element('td', 'wb-lab-state', session.status);
      cell.colSpan = 3;
      status.appendChild(cell);
      body.appendChild(status);
    }
    node.appendChild(table);
    return node;
  }

  private sessionRow(session: ISessionSummary): HTMLTableRowElement {
    const row = element('tr', 'wb-lab-session');
    row.dataset.session = session.id;
    row.appendChild(element('td', 'wb-lab-started', session.created.replace('T', ' ').slice(0, 16)));
    const best = element('td', 'wb-lab-best', formatUs(session.best_us));
    best.title = session.best_problem ?? '';
    row.appendChild(best);
    const speedup = element('td', 'wb-lab-speedup',
      session.speedup === null ? '—' : `${session.speedup.toFixed(2)}×`);
    speedup.title = session.speedup_note;
    row.appendChild(speedup);
    return row;
  }

  private readonly status: HTMLElement;
  private readonly list: HTMLElement;
  private timer = 0;
}
