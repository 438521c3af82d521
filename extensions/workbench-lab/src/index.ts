/**
 * Kernel Workbench for JupyterLab 4: a sidebar of kernel folders and stored sessions, CUDA
 * files with syntax colours, a launcher card "New tuning notebook" and "Tune this kernel"
 * on a `.cu` file's context menu. The server side is `workbench.ui.lab_server`.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { showErrorMessage } from '@jupyterlab/apputils';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';

import { INotebookReply, postJSON } from './api';
import { CUDA_EXTENSIONS, CUDA_FILE_TYPE, CUDA_MIME, cudaLanguage } from './cuda';
import { KernelSidebar } from './sidebar';

const PLUGIN_ID = 'kernel-workbench-lab:plugin';

namespace CommandIDs {
  export const openPanel = 'workbench:open-panel';
  export const newNotebook = 'workbench:new-tuning-notebook';
  export const tuneKernel = 'workbench:tune-this-kernel';
}

const ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" ' +
  'fill="#616161"><rect x="3" y="14" width="3" height="7"/><rect x="8" y="10" width="3" ' +
  'height="11"/><rect x="13" y="6" width="3" height="15"/><rect x="18" y="3" width="3" ' +
  'height="18"/></g></svg>';

export const workbenchIcon = new LabIcon({ name: 'kernel-workbench:icon', svgstr: ICON_SVG });

/** Open a notebook and, when asked, run all its cells once its kernel is ready. */
async function openNotebook(app: JupyterFrontEnd, path: string, run: boolean): Promise<void> {
  const widget = (await app.commands.execute('docmanager:open', {
    path,
    factory: 'Notebook'
  })) as NotebookPanel;
  if (!run) {
    return;
  }
  await widget.context.ready;
  await widget.sessionContext.ready;
  await NotebookActions.runAll(widget.content, widget.sessionContext);
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Kernel Workbench: kernels sidebar, CUDA files, tuning notebooks.',
  autoStart: true,
  requires: [IEditorLanguageRegistry],
  optional: [ILauncher, IDefaultFileBrowser, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    languages: IEditorLanguageRegistry,
    launcher: ILauncher | null,
    fileBrowser: IDefaultFileBrowser | null,
    restorer: ILayoutRestorer | null
  ) => {
    languages.addLanguage({
      name: 'CUDA',
      displayName: 'CUDA C++',
      alias: ['cuda', 'cu'],
      mime: CUDA_MIME,
      extensions: CUDA_EXTENSIONS.map(e => e.slice(1)),
      load: async () => cudaLanguage()
    });
    app.docRegistry.addFileType({
      name: CUDA_FILE_TYPE,
      displayName: 'CUDA source',
      extensions: CUDA_EXTENSIONS,
      mimeTypes: [CUDA_MIME],
      fileFormat: 'text',
      contentType: 'file',
      icon: workbenchIcon
    }, ['Editor']);

    const openPanel = async (kernelPath: string): Promise<void> => {
      const reply = await postJSON<INotebookReply>('notebook', { kernel: kernelPath });
      await openNotebook(app, reply.notebook, true);
    };

    app.commands.addCommand(CommandIDs.openPanel, {
      label: 'Open Tuning Panel',
      caption: 'Open (or create) the tuning panel notebook of a kernel folder',
      execute: args => openPanel(String(args.kernel ?? ''))
    });

    app.commands.addCommand(CommandIDs.newNotebook, {
      label: 'New tuning notebook',
      caption: 'A notebook that opens the Kernel Workbench panel on a kernel folder',
      icon: workbenchIcon,
      execute: async () => {
        try {
          const reply = await postJSON<INotebookReply>('notebook', {});
          await openNotebook(app, reply.notebook, false);
        } catch (error) {
          await showErrorMessage('New tuning notebook', error as Error);
        }
      }
    });

    app.commands.addCommand(CommandIDs.tuneKernel, {
      label: 'Tune this kernel',
      caption: 'Scaffold a kernel folder from this .cu (workbench init) and open its panel',
      icon: workbenchIcon,
      isVisible: () => {
        const item = fileBrowser?.selectedItems().next();
        const name = item && !item.done ? item.value.name : '';
        return CUDA_EXTENSIONS.some(ext => name.endsWith(ext));
      },
      execute: async () => {
        const item = fileBrowser?.selectedItems().next();
        if (!item || item.done) {
          return;
        }
        try {
          const reply = await postJSON<INotebookReply>('init', { path: item.value.path });
          // With placeholders left the panel cannot load yet: open both, run nothing.
          await openNotebook(app, reply.notebook, !reply.fill_in);
          if (reply.fill_in) {
            await app.commands.execute('docmanager:open', { path: reply.fill_in });
          }
        } catch (error) {
          await showErrorMessage(`Tune ${item.value.name}`, error as Error);
        }
      }
    });

    app.contextMenu.addItem({
      command: CommandIDs.tuneKernel,
      selector: `.jp-DirListing-item[data-file-type="${CUDA_FILE_TYPE}"]`,
      rank: 1
    });

    if (launcher) {
      launcher.add({ command: CommandIDs.newNotebook, category: 'Kernel Workbench', rank: 1 });
    }

    const sidebar = new KernelSidebar(openPanel);
    sidebar.title.icon = workbenchIcon;
    app.shell.add(sidebar, 'left', { rank: 600 });
    if (restorer) {
      restorer.add(sidebar, sidebar.id);
    }
  }
};

export default plugin;
