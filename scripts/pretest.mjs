// Runs before `npm test`: the suite needs two Debian packages (three as root: iproute2). Chromium: the inspector test
// drives it headless (playwright-core never downloads a browser). nats-server: the
// JetStream transport and cluster tests start their own on loopback. Each is installed here
// when this user can (root with apt-get); otherwise the suite stops at once with the one
// command to run.
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';

const has = (program) => spawnSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status === 0;
const NEEDED = [
  { pkg: 'chromium', present: () => fs.existsSync('/usr/bin/chromium'), why: "the inspector test needs Debian's Chromium at /usr/bin/chromium" },
  { pkg: 'nats-server', present: () => has('nats-server'), why: 'the JetStream transport and cluster tests need nats-server' },
  // npm run test:cluster makes network namespaces, which only root can: installed for root
  // alongside the others (anyone else skips that script anyway).
  { pkg: 'iproute2', present: () => has('ip'), why: 'test:cluster makes network namespaces with ip', rootOnly: true },
];

const missing = NEEDED.filter((n) => !n.present() && (!n.rootOnly || process.getuid?.() === 0));
if (missing.length > 0) {
  const names = missing.map((n) => n.pkg);
  const command = `apt-get update && apt-get install -y ${names.join(' ')}`;
  if (process.getuid?.() === 0 && has('apt-get')) {
    process.stderr.write(`pretest: installing ${names.join(' and ')} (apt-get)...\n`);
    const update = spawnSync('apt-get', ['update'], { stdio: 'inherit' });
    const install = update.status === 0 ? spawnSync('apt-get', ['install', '-y', ...names], { stdio: 'inherit' }) : update;
    if (install.status !== 0 || missing.some((n) => !n.present())) {
      process.stderr.write(`pretest: apt-get could not install ${names.join(' and ')}; run \`${command}\`, then \`npm test\`\n`);
      process.exit(1);
    }
  } else {
    process.stderr.write(`pretest: ${missing.map((n) => n.why).join('; ')}. Run:\n\n  sudo ${command.replace('&& apt-get', '&& sudo apt-get')}\n\nthen \`npm test\` again.\n`);
    process.exit(1);
  }
}
