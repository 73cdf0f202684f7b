'use strict';
// podman, run with the project's settings (docker/podman/containers.conf plus the
// netavark network backend, whose aardvark-dns resolves container names and aliases).
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const repoRoot = path.resolve(__dirname, '..', '..', '..');

// containers.conf for the deployment test: the images' settings with the netavark
// network backend (CNI on Debian 12 has no DNS plugin installed; aardvark-dns does
// the name resolution a cluster's DNS would). Written once per process.
let confPath;
function containersConf() {
  if (confPath) return confPath;
  const base = fs.readFileSync(path.join(repoRoot, 'docker', 'podman', 'containers.conf'), 'utf8');
  confPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'chessrl-deploy-')), 'containers.conf');
  fs.writeFileSync(confPath, `${base}\n[network]\nnetwork_backend = "netavark"\n`);
  return confPath;
}

function env() {
  return { ...process.env, CONTAINERS_CONF: process.env.CHESSRL_DEPLOY_CONTAINERS_CONF || containersConf() };
}

// Runs podman; resolves {code, stdout, stderr}. Rejects only when podman cannot start.
// options: input (stdin text), timeoutMs.
function podman(args, { input, timeoutMs = 120000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn('podman', args, { env: env(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, timeoutMs);
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', (err) => { clearTimeout(timer); reject(new Error(`cannot run podman: ${err.message}`)); });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: timedOut ? 124 : code, stdout, stderr, timedOut });
    });
    child.stdin.on('error', () => {}); // a command that exits before reading its input
    child.stdin.end(input ?? '');
  });
}

// podman that must succeed: resolves stdout, or throws naming the command and its error.
async function must(args, options) {
  const r = await podman(args, options);
  if (r.code !== 0) {
    throw new Error(`podman ${args.join(' ')} failed (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}`);
  }
  return r.stdout;
}

module.exports = { podman, must, containersConf, repoRoot };
