'use strict';
// 30 minutes of a made-up scrape of one chess-rl release (two self-play pods with a GPU
// each, two trainer ranks, replay, the evaluator, one DCGM exporter series), in promtool's
// input_series format, so that every dashboard query can be evaluated offline. With
// kubernetes=true the series carry the labels the chart's PodMonitors add, and
// kube-state-metrics describes the release's self-play Deployment and KEDA's
// HorizontalPodAutoscaler; without, only job and instance (`chessrl local` scraped by a
// static config).
// It also holds any metric the dashboard uses that nothing exports yet (PENDING_METRICS).
const POINTS = 30; // one a minute

function syntheticScrape({ kubernetes = true } = {}) {
  const series = [];
  let port = 40000;
  const target = (component, name) => {
    const l = kubernetes
      ? { namespace: 'ml', app_kubernetes_io_instance: 'chess-rl', job: `ml/chess-rl-${component}`,
        instance: `chess-rl-${name}`, pod: `chess-rl-${name}`, component }
      : { job: 'chessrl', instance: `127.0.0.1:${++port}` };
    return (metric, values, extra = {}) => {
      const labels = Object.entries({ ...l, ...extra }).map(([k, v]) => `${k}="${v}"`).join(',');
      series.push({ series: `${metric}{${labels}}`, values });
    };
  };
  const counter = (perMinute) => `0+${perMinute}x${POINTS}`;
  const gauge = (v) => `${v}x${POINTS}`;

  for (const [i, version] of [['a', 3], ['b', 5]]) {
    const add = target('selfplay', `selfplay-${i}`);
    add('up', gauge(1));
    add('chessrl_build_info', gauge(1), { version: '0.1.0' });
    add('chessrl_model_version', gauge(version));
    add('chessrl_selfplay_games_total', counter(10));
    add('chessrl_selfplay_positions_total', counter(1000));
    add('chessrl_selfplay_games_buffered', gauge(2));
    add('chessrl_selfplay_games_pushed_total', counter(10));
    add('chessrl_selfplay_games_shed_total', counter(0));
    add('chessrl_selfplay_push_failures_total', counter(0));
    add('chessrl_selfplay_games_rejected_total', counter(0), { reason: 'bad_fen' });
    add('chessrl_selfplay_model_swaps_total', counter(0.1));
    add('chessrl_selfplay_drain_seconds_total', counter(1));
    add('chessrl_selfplay_model_overlap_seconds_total', counter(1));
    add('chessrl_selfplay_models_in_play', gauge(1));
    add('chessrl_selfplay_game_results_total', counter(5), { result: 'draw' });
    add('chessrl_selfplay_game_results_total', counter(3), { result: 'white' });
    add('chessrl_selfplay_game_results_total', counter(2), { result: 'black' });
    add('chessrl_inference_evals_total', counter(5000));
    add('chessrl_inference_forward_seconds_total', counter(30));
    add('chessrl_inference_requests_total', counter(6000));
    add('chessrl_inference_cache_hits_total', counter(1000));
    add('chessrl_selfplay_search_threads', gauge(2));
    add('chessrl_selfplay_search_busy_seconds_total', counter(90));
    for (const [le, n] of [['1', 5], ['2', 10], ['4', 20], ['8', 40], ['16', 70], ['32', 95], ['+Inf', 100]]) {
      add('chessrl_inference_batch_size_bucket', counter(n), { le });
    }
    add('chessrl_inference_batch_size_sum', counter(1500));
    add('chessrl_inference_batch_size_count', counter(100));
    add('chessrl_gpu_info', gauge(1), { gpu: '0', name: 'NVIDIA H100 80GB HBM3' });
    add('chessrl_gpu_utilization_ratio', gauge(0.7), { gpu: '0' });
    add('chessrl_gpu_memory_used_bytes', gauge(1e9), { gpu: '0' });
    add('chessrl_gpu_memory_total_bytes', gauge(8e10), { gpu: '0' });
  }
  for (const rank of [0, 1]) {
    const add = target('trainer', `trainer-${rank}`);
    add('up', gauge(1));
    add('chessrl_build_info', gauge(1), { version: '0.1.0' });
    add('chessrl_trainer_rank', gauge(rank));
    add('chessrl_trainer_world_size', gauge(2));
    add('chessrl_model_version', gauge(rank === 0 ? 6 : 0));
    add('chessrl_trainer_steps_total', counter(60));
    add('chessrl_trainer_samples_total', counter(30000));
    add('chessrl_trainer_samples_per_second', gauge(500));
    for (const head of ['policy', 'value', 'total']) add('chessrl_trainer_loss', gauge(2), { head });
    add('chessrl_trainer_step_seconds_total', counter(60));
    add('chessrl_trainer_data_wait_seconds_total', counter(10));
    add('chessrl_trainer_allreduce_seconds_total', counter(5));
    add('chessrl_trainer_step_seconds', gauge(1));
    add('chessrl_trainer_step', gauge(1000));
    add('chessrl_trainer_paused', gauge(0));
    add('chessrl_trainer_learning_rate', gauge(0.001));
    add('chessrl_trainer_sample_reuse_ratio', gauge(3.5));
    add('chessrl_trainer_max_reuse', gauge(4)); // pending: not exported yet
  }
  {
    const add = target('replay', 'replay-a');
    add('up', gauge(1));
    add('chessrl_build_info', gauge(1), { version: '0.1.0' });
    add('chessrl_model_version', gauge(6));
    add('chessrl_replay_store_up', gauge(1));
    add('chessrl_replay_positions', gauge(50000));
    add('chessrl_replay_games', gauge(500));
    add('chessrl_replay_games_stored_total', counter(20));
    add('chessrl_replay_games_duplicate_total', counter(1));
    add('chessrl_replay_games_rejected_total', counter(1), { reason: 'bad_fen' });
    add('chessrl_replay_positions_stored_total', counter(2000));
    add('chessrl_replay_positions_sampled_total', counter(30000));
    add('chessrl_replay_store_errors_total', counter(0));
    add('chessrl_replay_store_memory_used_bytes', gauge(1e8));
    add('chessrl_replay_store_memory_max_bytes', gauge(1e9));
    add('chessrl_replay_store_aof_enabled', gauge(1));
    for (const kind of ['aof', 'rdb']) add('chessrl_replay_store_persistence_ok', gauge(1), { kind });
    add('chessrl_replay_store_changes_since_save', gauge(1200));
    add('chessrl_replay_store_last_save_timestamp_seconds', gauge(1.7e9));
    add('chessrl_replay_rpc_requests_total', counter(60), { method: 'Sample', code: 'OK' });
    for (const [le, n] of [['0.01', 50], ['0.1', 59], ['+Inf', 60]]) {
      add('chessrl_replay_rpc_duration_seconds_bucket', counter(n), { method: 'Sample', le });
    }
  }
  {
    const add = target('evaluator', 'evaluator-a');
    add('up', gauge(1));
    add('chessrl_build_info', gauge(1), { version: '0.1.0' });
    add('chessrl_model_version', gauge(5));
    add('chessrl_eval_best_version', gauge(4));
    add('chessrl_eval_matches_total', counter(0.1));
    add('chessrl_eval_promotions_total', counter(0.01));
    add('chessrl_eval_match_seconds_total', counter(6));
    // The Stockfish ladder: its first rung in play.
    add('chessrl_eval_ladder_rung', gauge(1));
    add('chessrl_eval_ladder_in_play', gauge(1), { opponent: 'stockfish-skill0' });
    add('chessrl_eval_ladder_in_play', gauge(0), { opponent: 'stockfish-skill1' });
    for (const opponent of ['best', 'random', 'stockfish-skill0']) {
      add('chessrl_eval_elo', gauge(30), { opponent });
      add('chessrl_eval_elo_lower', gauge(-10), { opponent });
      add('chessrl_eval_elo_upper', gauge(70), { opponent });
      add('chessrl_eval_score', gauge(0.55), { opponent });
      for (const result of ['win', 'draw', 'loss']) add('chessrl_eval_games_total', counter(1), { opponent, result });
      for (const side of ['candidate', 'opponent']) add('chessrl_eval_forfeits_total', counter(0), { opponent, side });
    }
  }
  if (kubernetes) {
    const ksm = 'job="kube-state-metrics",instance="10.0.0.9:8080",namespace="ml"';
    series.push(
      { series: `kube_horizontalpodautoscaler_status_desired_replicas{${ksm},horizontalpodautoscaler="keda-hpa-chess-rl-selfplay"}`, values: `3x${POINTS}` },
      { series: `kube_deployment_status_replicas_available{${ksm},deployment="chess-rl-selfplay"}`, values: `2x${POINTS}` });
  }
  series.push({
    series: 'DCGM_FI_DEV_GPU_UTIL{Hostname="node-1",gpu="0",exported_namespace="ml",exported_pod="chess-rl-selfplay-a"}',
    values: `70x${POINTS}`,
  });
  return series;
}

module.exports = { syntheticScrape, POINTS };
