/** The module's structured logger (JSON lines on stdout; level from LOG_LEVEL, default info). */
import winston from "winston";

export const log = winston.createLogger({
  level: process.env.LOG_LEVEL ?? "info",
  format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
  defaultMeta: { component: "kengine-gateway" },
  transports: [new winston.transports.Console()],
});
