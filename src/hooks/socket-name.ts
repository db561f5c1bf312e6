/** File name of the hooks socket in a hive root (HIVE_SOCK). */
export const HOOKS_SOCKET = 'hooks.sock';
