# docs/scaling.md's picture: Redis shards needed against self-play GPUs, from the
# constants `chessrl bench capacity` measured (docs/scaling.md, "Measured constants").
#   cd docs/images/src && gnuplot scaling-capacity.gp   (writes ../scaling-capacity.png)
c_in = 4.34      # Redis main-thread us per position ingested and evicted
c_s  = 2.24      # Redis main-thread us per sampled position
per_gpu = 1111.0 # positions/s a self-play GPU makes (40,000 games/h of ~100 positions)
busy = 0.6       # a shard's main thread at most 60% busy
shards(n, r) = ceil(per_gpu * n * (c_in + r * c_s) / busy / 1e6)

set terminal pngcairo size 900,560 font "Helvetica,11"
set output "../scaling-capacity.png"
set title "Redis shards needed (each main thread <= 60% busy), measured per-position costs"
set xlabel "self-play GPUs (1,111 positions/s each)"
set ylabel "Redis shards"
set logscale xy
set xrange [10:10000]
set yrange [1:400]
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key top left box opaque
set samples 400
set arrow from 10,64 to 10000,64 nohead dt 2 lc rgb "#aa3333"
set label "chart's limit: redis.shards <= 64" at 14,75 tc rgb "#aa3333"
set label sprintf("one Redis: about %d GPUs at reuse 4", floor(busy*1e6/(per_gpu*(c_in+4*c_s)))) at 600,1.4
plot shards(x, 0) w steps lw 2 lc rgb "#5a8f3a" t "ingest only (no trainer reads)", \
     shards(x, 1) w steps lw 2 lc rgb "#3a6fb0" t "trainer reads each position once (R = 1)", \
     shards(x, 4) w steps lw 2 lc rgb "#c0602a" t "--max-reuse 4 (R = 4, the default)"
