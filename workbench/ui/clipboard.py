"""A one-button anywidget that copies its ``text`` to the browser's clipboard."""

from __future__ import annotations

import anywidget
import traitlets

_ESM = """
function render({ model, el }) {
  const button = document.createElement("button");
  button.className = "wb-copy-button jupyter-button";
  const label = () => model.get("label");
  button.textContent = label();
  button.addEventListener("click", async () => {
    const text = model.get("text");
    let ok = false;
    try {
      await navigator.clipboard.writeText(text);
      ok = true;
    } catch (e) {
      // Fallback for contexts without the async clipboard API.
      const area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      ok = document.execCommand("copy");
      area.remove();
    }
    button.textContent = ok ? "copied" : "copy failed";
    model.set("copies", model.get("copies") + (ok ? 1 : 0));
    model.save_changes();
    setTimeout(() => { button.textContent = label(); }, 1500);
  });
  model.on("change:label", () => { button.textContent = label(); });
  el.appendChild(button);
}
export default { render };
"""


class CopyButton(anywidget.AnyWidget):
    """Button that writes ``text`` to the clipboard; ``copies`` counts successful copies."""

    _esm = _ESM
    text = traitlets.Unicode("").tag(sync=True)
    label = traitlets.Unicode("copy #defines").tag(sync=True)
    copies = traitlets.Int(0).tag(sync=True)
