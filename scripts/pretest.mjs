// Runs before `npm test`: the suite needs Debian's Chromium (the inspector test drives it
// headless; playwright-core never downloads a browser). Installed here when this user can
// (root with apt-get); otherwise the suite stops at once with the one command to run.
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';

const CHROMIUM = '/usr/bin/chromium';

if (!fs.existsSync(CHROMIUM)) {
  const canInstall = process.getuid?.() === 0 && spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0;
  if (canInstall) {
    process.stderr.write('pretest: installing Debian\'s chromium for the inspector test (apt-get)...\n');
    const update = spawnSync('apt-get', ['update'], { stdio: 'inherit' });
    const install = update.status === 0 ? spawnSync('apt-get', ['install', '-y', 'chromium'], { stdio: 'inherit' }) : update;
    if (install.status !== 0 || !fs.existsSync(CHROMIUM)) {
      process.stderr.write('pretest: apt-get could not install chromium; run `apt-get update && apt-get install -y chromium`, then `npm test`\n');
      process.exit(1);
    }
  } else {
    process.stderr.write(`pretest: the inspector test needs Debian's Chromium at ${CHROMIUM}. Run:\n\n  sudo apt-get update && sudo apt-get install -y chromium\n\nthen \`npm test\` again.\n`);
    process.exit(1);
  }
}
