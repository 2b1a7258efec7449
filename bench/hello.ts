// The baseline: a bare Bun.serve hello-world on the port given as the first argument.
Bun.serve({ hostname: "127.0.0.1", port: Number(process.argv[2]), fetch: () => new Response("hello world") });
