// Writes labextension/build-source.sha256: one hash over the files the build reads
// (package.json, package-lock.json, tsconfig.json, webpack.config.js, src/, style/), so a
// test can tell when the committed build no longer matches its sources
// (tests/test_lab_extension.py).
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

function files(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? files(full) : [full];
  });
}

const root = path.resolve(__dirname, '..');
const inputs = ['package.json', 'package-lock.json', 'tsconfig.json', 'webpack.config.js']
  .concat(files(path.join(root, 'src')).map(f => path.relative(root, f)))
  .concat(files(path.join(root, 'style')).map(f => path.relative(root, f)))
  .map(f => f.split(path.sep).join('/'))
  .sort();
const hash = crypto.createHash('sha256');
for (const name of inputs) {
  hash.update(name + '\0');
  hash.update(fs.readFileSync(path.join(root, name)));
  hash.update('\0');
}
fs.writeFileSync(path.join(root, 'labextension', 'build-source.sha256'), hash.digest('hex') + '\n');
