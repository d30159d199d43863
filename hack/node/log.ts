/** Line-oriented logging to stdout (hack/node/node.sh sends it to .local/logs/services.log). */
export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

const line = (level: string, msg: string): void => {
  process.stdout.write(`${new Date().toISOString()} ${level} ${msg}\n`);
};

export const logger: Logger = {
  info: m => line("INFO ", m),
  warn: m => line("WARN ", m),
  error: m => line("ERROR", m),
};
