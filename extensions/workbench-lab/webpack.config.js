// Merged into @jupyter/builder's rspack config (package.json jupyterlab.webpackConfig).
// Module ids named by their path relative to this folder: the default ("deterministic")
// hashes the module federation container's identifier, which holds absolute paths, so a
// checkout elsewhere built other bundle names and contents. With this a fresh
// `npm ci && npm run build` on any machine writes the committed labextension/ byte for byte.
module.exports = {
  optimization: {
    moduleIds: 'named'
  }
};
