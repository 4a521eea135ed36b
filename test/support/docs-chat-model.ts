import type { ChatCompletionRequest, ModelTurn } from './scripted-model-server.js';

/**
 * The model's side of the chat example in docs/chat.md ("Total the amounts per region and give me
 * the file."), as a scripted model plays it: one step per tool result since the user's message —
 * import the attached CSV, total it per region with python3 into `totals.csv`, publish that, and
 * answer. A real model picks its own steps; these are the ones the example's output shows.
 */
export function totalsPerRegionTurn(request: ChatCompletionRequest): ModelTurn {
  const lastUser = request.messages.map((message) => message.role).lastIndexOf('user');
  const sinceUser = request.messages.slice(lastUser);
  // The attachment reaches the model as a descriptor naming its storage path.
  const storagePath = /storagePath=\\"(uploads\/[0-9a-f]{32})\\"/.exec(JSON.stringify(sinceUser))?.[1];
  if (storagePath === undefined) return { text: 'Attach a CSV file and I will total it.' };
  const toolResults = sinceUser.filter((message) => message.role === 'tool');
  const imported = /uploads\/[^"\\]+\.csv/.exec(JSON.stringify(toolResults))?.[0] ?? 'uploads/sales.csv';
  const turns: ModelTurn[] = [
    { toolCalls: [{ name: 'sandbox_import_file', arguments: { storagePath } }] },
    { toolCalls: [{ name: 'sandbox_exec', arguments: { command: totalsCommand(imported) } }] },
    { toolCalls: [{ name: 'sandbox_publish_file', arguments: { path: 'totals.csv', filename: 'totals.csv' } }] },
    { text: 'Here are the totals.' },
  ];
  return turns[toolResults.length] ?? { text: 'Done.' };
}

/**
 * The Python a scripted model runs in the sandbox: the CSV's `amount` totalled per region into
 * `output` (`region,total` rows, sorted by region).
 */
export function totalsCommand(csvPath: string, output = 'totals.csv'): string {
  return [
    "python3 - <<'PY'",
    'import csv',
    'totals = {}',
    `with open(${JSON.stringify(csvPath)}, newline="") as source:`,
    '    for row in csv.DictReader(source):',
    '        totals[row["region"]] = totals.get(row["region"], 0) + int(row["amount"])',
    `with open(${JSON.stringify(output)}, "w", newline="") as target:`,
    '    writer = csv.writer(target, lineterminator="\\n")',
    '    writer.writerow(["region", "total"])',
    '    for region in sorted(totals):',
    '        writer.writerow([region, totals[region]])',
    'PY',
  ].join('\n');
}
