/**
 * Calls to the workbench server extension (`workbench.ui.lab_server`) under
 * `<base_url>/workbench/`. Errors carry the server's message, which names what went wrong.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** One stored session of a kernel, summarised by the server. */
export interface ISessionSummary {
  id: string;
  created: string;
  trials: number;
  ok: number;
  best_us: number | null;
  best_problem: string | null;
  speedup: number | null;
  speedup_note: string;
  status: string;
  /** How the stored pick was decided ("confirmed", "search-best"), "" without one. */
  decided?: string;
  pick_note?: string;
  pick_config?: Record<string, unknown> | null;
}

/** One kernel folder and its stored sessions, newest first. */
export interface IKernelSummary {
  name: string;
  path: string;
  sessions: ISessionSummary[];
}

export interface IKernelIndex {
  kernels: IKernelSummary[];
  store: string;
  problems: string[];
}

export interface INotebookReply {
  notebook: string;
  folder?: string;
  /** kernel.toml when `workbench init` left FILL_IN placeholders in it (shapes, tolerances). */
  fill_in?: string | null;
  created: boolean;
}

export async function requestAPI<T>(endpoint: string, init: RequestInit = {}): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'workbench', endpoint);
  const response = await ServerConnection.makeRequest(url, init, settings);
  const text = await response.text();
  let data: any = text;
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    // a non-JSON body (a proxy's error page) is reported as text below
  }
  if (!response.ok) {
    const message = typeof data === 'object' && data && data.message ? data.message : text;
    throw new Error(`workbench server: ${message || response.statusText}`);
  }
  return data as T;
}

export function postJSON<T>(endpoint: string, body: unknown): Promise<T> {
  return requestAPI<T>(endpoint, { method: 'POST', body: JSON.stringify(body) });
}
