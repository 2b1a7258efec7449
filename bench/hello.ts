// The baseline: a bare Bun.serve hello-world on the port given as the first argument (two of them may share it, as
// the processes of svc serve --workers do).
Bun.serve({ hostname: "127.0.0.1", port: Number(process.argv[2]), reusePort: true, fetch: () => new Response("hello world") });
