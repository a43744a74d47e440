const mods = process.argv.slice(2)
for (const m of mods) { const t=performance.now(); try { await import(m) } catch(e) { console.log(m, "ERR", e.message.slice(0,80)); continue } console.log(m, (performance.now()-t).toFixed(0)) }
