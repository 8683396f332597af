/** What the management API takes of the usage export's settings: off, or the CloudEvents source. */
export interface UsageExportSettings {
  source: string;
}

export function usageExportOf(c: {
  usageExport: boolean;
  usageExportSource: string;
}): UsageExportSettings | undefined {
  return c.usageExport ? { source: c.usageExportSource } : undefined;
}
