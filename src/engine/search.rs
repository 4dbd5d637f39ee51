//! Iterative deepening principal-variation search over shakmaty positions (copy-make).
//!
//! What "a node" is: one call of the main search (below the root), of quiescence, or the root
//! itself, counted on entry before anything else is done. `Limits::nodes(N)` is compared with
//! that count at every node, so a search that runs out reports exactly N nodes, unless depth 1
//! alone costs more (depth 1 always completes, so a legal move always comes back). The
//! observer's `should_stop` is polled whenever the count is a multiple of 1024 and before
//! every iteration, from depth 2 on.
//!
//! Features: aspiration windows, PVS, quiescence on our own capture generator, a transposition
//! table, hash move / SEE-sorted captures / killers / history ordering, reverse futility
//! pruning, null-move pruning, internal iterative reduction, futility and exchange (SEE)
//! pruning, late-move reductions and pruning (both milder while the static evaluation is
//! improving), check extension, and draws by
//! repetition (a position seen once before, in the search path or in the game since the last
//! irreversible move, counts as a draw: the side ahead avoids it), the 50-move
//! rule and insufficient material. Nothing depends on time or on hash-map order: the same
//! inputs (including the table's contents) give the same move and node count.

use shakmaty::zobrist::{Zobrist64, ZobristValue};
use shakmaty::{Chess, Color, EnPassantMode, Move, MoveList, Position, Role};

use super::blindness::Blindness;
use super::constants::{self, SearchConstants};
use std::sync::Arc;

use super::eval::add_noise;
use super::evaluator::{Evaluator, PathEvaluation};
use super::limits::{SearchInfo, SearchObserver};
use super::movegen::captures_and_promotions;
use super::movepack::PackedMove;
use super::noise::Noise;
use super::ordering::{Context, Heuristics, PieceTo, is_quiet, pick, score_captures, score_moves};
use super::params::SearchParams;
use super::position::Game;
use super::score::{
    DRAW, INFINITE, MATE_BOUND, MAX_PLY, Score, is_mate, mate_in, mated_in, to_public,
};
use super::see::{see_at_least, see_non_negative, see_value};
use super::tt::{Bound, Tt};
use super::weights::Weights;

/// What a search returns. `best_move` is `None` only when the side to move has no legal move.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchResult {
    pub best_move: Option<Move>,
    pub score: Score,
    pub depth: u32,
    pub nodes: u64,
    pub pv: Vec<Move>,
}

/// A single-threaded search with its own transposition table.
pub struct Engine {
    hash_mb: usize,
    evaluator: Evaluator,
    constants: SearchConstants,
    tt: Tt,
    heuristics: Heuristics,
}

/// Iterations from this depth on search inside an aspiration window.
const ASPIRATION_MIN_DEPTH: u32 = 4;
/// The deepest iteration started (leaves room for extensions below MAX_PLY).
const MAX_ITERATION: u32 = (MAX_PLY - 8) as u32;
/// Internal iterative reduction applies from this depth on (so a reduced node keeps depth 2).
const IIR_MIN_DEPTH: i32 = 4;

impl Engine {
    pub fn new(hash_mb: usize) -> Engine {
        Engine::with_weights(hash_mb, Weights::shipped())
    }

    /// An engine evaluating with `weights` instead of the shipped ones (the tuner's matches).
    pub fn with_weights(hash_mb: usize, weights: Arc<Weights>) -> Engine {
        Engine::with_evaluator(hash_mb, Evaluator::Classical(weights))
    }

    /// An engine searching with `evaluator` (the hand-crafted evaluation or a network).
    pub fn with_evaluator(hash_mb: usize, evaluator: Evaluator) -> Engine {
        Engine {
            hash_mb,
            evaluator,
            constants: SearchConstants::shipped(),
            tt: Tt::new(hash_mb),
            heuristics: Heuristics::default(),
        }
    }

    pub fn evaluator(&self) -> &Evaluator {
        &self.evaluator
    }

    pub fn hash_mb(&self) -> usize {
        self.hash_mb
    }

    /// Searches with `constants` instead of the shipped ones (the genetic tuner's candidates).
    pub fn set_search_constants(&mut self, constants: SearchConstants) {
        self.constants = constants;
    }

    /// Searches with `evaluator` from now on. The table is cleared: its static evaluations are
    /// the old evaluator's.
    pub fn set_evaluator(&mut self, evaluator: Evaluator) {
        self.evaluator = evaluator;
        self.tt.clear();
    }

    /// Resizes (and clears) the transposition table.
    pub fn set_hash_mb(&mut self, hash_mb: usize) {
        self.hash_mb = hash_mb;
        self.tt = Tt::new(hash_mb);
    }

    /// Forgets everything learned (hash, history): call between games.
    pub fn new_game(&mut self) {
        self.tt.clear();
        self.heuristics.clear();
    }

    /// Permille of the hash table filled by the last search (UCI `hashfull`).
    pub fn hashfull(&self) -> u32 {
        self.tt.hashfull()
    }

    /// Searches `game`'s current position within `params`' limits and noise.
    ///
    /// Deterministic: the result depends only on the game (with its history), the parameters,
    /// the hash size and the table's contents. Killers and history are reset per search; the
    /// table is not (it carries knowledge from move to move). So a logged game replays bit for
    /// bit when its searches are repeated in order on an engine that started the game with
    /// [`Engine::new_game`]; an engine shared between interleaved games needs `new_game` before
    /// every search for that guarantee.
    pub fn search(
        &mut self,
        game: &Game,
        params: &SearchParams,
        observer: &mut dyn SearchObserver,
    ) -> SearchResult {
        let root = game.position();
        let root_key = game.key();
        let mut root_moves: Vec<Move> = root.legal_moves().into_iter().collect();
        if root_moves.is_empty() {
            let score = if root.is_check() {
                Score::Mate(0)
            } else {
                Score::Cp(0)
            };
            return SearchResult {
                best_move: None,
                score,
                depth: 0,
                nodes: 0,
                pv: Vec::new(),
            };
        }
        self.tt.new_search();
        // Killers and history are per search: a search's result depends only on its inputs
        // and the table, which `new_game` clears.
        self.heuristics.clear();

        // Initial root order: the table's move, then the usual ordering.
        {
            let list: MoveList = root_moves.iter().copied().collect();
            let mut scores = vec![0; list.len()];
            let hash_move = self.tt.probe(root_key, 0).and_then(|h| h.mv);
            score_moves(
                &list,
                &mut scores,
                root,
                hash_move,
                &self.heuristics,
                0,
                &[None, None],
            );
            let mut order: Vec<usize> = (0..list.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(scores[i]));
            root_moves = order.into_iter().map(|i| list[i]).collect();
        }

        let mut keys = Vec::with_capacity(game.keys().len() + MAX_PLY + 2);
        keys.extend_from_slice(game.keys());
        let mut searcher = Searcher {
            eval: PathEvaluation::new(&self.evaluator, root),
            constants: &self.constants,
            tt: &mut self.tt,
            heuristics: &mut self.heuristics,
            observer,
            noise: params.noise,
            blindness: params.blindness,
            game_ply: game.moves().len(),
            nodes: 0,
            node_limit: params.limits.nodes.unwrap_or(u64::MAX),
            can_stop: false,
            stopped: false,
            keys,
            pv: vec![[None; MAX_PLY + 1]; MAX_PLY + 1],
            pv_len: [0; MAX_PLY + 1],
            evals: [-INFINITE; MAX_PLY + 2],
            played: [None; MAX_PLY + 2],
            seldepth: 0,
            iteration_best: None,
            pass_nodes: 0,
            best_move_nodes: 0,
        };
        let max_depth = params
            .limits
            .depth
            .unwrap_or(MAX_ITERATION)
            .clamp(1, MAX_ITERATION);
        searcher.iterate(root, root_key, &mut root_moves, max_depth)
    }
}

/// Everything one search needs, bundled so the recursive functions keep short signatures.
struct Searcher<'a> {
    /// The static evaluation, with its state along the current path.
    eval: PathEvaluation<'a>,
    constants: &'a SearchConstants,
    tt: &'a mut Tt,
    heuristics: &'a mut Heuristics,
    observer: &'a mut dyn SearchObserver,
    noise: Noise,
    blindness: Blindness,
    /// Moves played in the game before the root (the blindness draws depend on it).
    game_ply: usize,
    nodes: u64,
    node_limit: u64,
    /// False until depth 1 is complete: before that no limit may stop the search.
    can_stop: bool,
    stopped: bool,
    /// Zobrist keys of the game's positions followed by those of the current search path.
    keys: Vec<u64>,
    /// Triangular PV table.
    pv: Vec<[Option<Move>; MAX_PLY + 1]>,
    pv_len: [usize; MAX_PLY + 1],
    /// The static evaluation (noise included) of the node at each ply of the current path;
    /// `-INFINITE` where the side to move was in check.
    evals: [i32; MAX_PLY + 2],
    /// The move that led to the node at each ply of the current path (`None`: the root, or
    /// a null move).
    played: [Option<PieceTo>; MAX_PLY + 2],
    seldepth: usize,
    /// Best root move of the iteration in progress, with its score and PV, once one move has
    /// been searched to completion inside the window.
    iteration_best: Option<(Move, i32, Vec<Move>)>,
    /// Nodes of the latest pass over the root, and those under its best move (for time
    /// management; they never steer the search).
    pass_nodes: u64,
    best_move_nodes: u64,
}

impl Searcher<'_> {
    fn iterate(
        &mut self,
        root: &Chess,
        root_key: u64,
        root_moves: &mut [Move],
        max_depth: u32,
    ) -> SearchResult {
        let mut result = SearchResult {
            best_move: Some(root_moves[0]),
            score: Score::Cp(0),
            depth: 0,
            nodes: 0,
            pv: vec![root_moves[0]],
        };
        let mut previous = 0;
        for depth in 1..=max_depth {
            // Also asked between iterations, so a stop raised early does not wait for the next
            // multiple of 1024 nodes (a small tree may never reach one).
            if depth > 1 && self.observer.should_stop(self.nodes) {
                break;
            }
            self.seldepth = 0;
            let mut delta = self.constants.get(constants::ASPIRATION_WINDOW);
            let (mut alpha, mut beta) = if depth >= ASPIRATION_MIN_DEPTH && !is_mate(previous) {
                (previous - delta, previous + delta)
            } else {
                (-INFINITE, INFINITE)
            };
            self.iteration_best = None;
            let score = loop {
                let score = self.root(root, root_key, root_moves, depth as i32, alpha, beta);
                if self.stopped {
                    break score;
                }
                if score <= alpha {
                    beta = (alpha + beta) / 2;
                    alpha = (score - delta).max(-INFINITE);
                } else if score >= beta {
                    beta = (score + delta).min(INFINITE);
                } else {
                    break score;
                }
                delta += delta;
            };
            if self.stopped {
                // A root move that beat the previous best inside this iteration's window is
                // better informed than the last completed iteration's choice.
                if let Some((m, s, pv)) = self.iteration_best.take() {
                    result.best_move = Some(m);
                    result.score = to_public(s);
                    result.pv = pv;
                }
                result.nodes = self.nodes;
                self.observer.on_iteration(&SearchInfo {
                    depth: result.depth,
                    seldepth: self.seldepth as u32,
                    score: result.score,
                    nodes: self.nodes,
                    pv: result.pv.clone(),
                    best_move_nodes: self.best_move_nodes,
                    pass_nodes: self.pass_nodes,
                });
                return result;
            }
            previous = score;
            let pv: Vec<Move> = self.pv[0][..self.pv_len[0]]
                .iter()
                .map_while(|m| *m)
                .collect();
            result = SearchResult {
                best_move: Some(root_moves[0]),
                score: to_public(score),
                depth,
                nodes: self.nodes,
                pv: if pv.first() == Some(&root_moves[0]) {
                    pv
                } else {
                    vec![root_moves[0]]
                },
            };
            self.can_stop = true;
            self.observer.on_iteration(&SearchInfo {
                depth,
                seldepth: self.seldepth as u32,
                score: result.score,
                nodes: self.nodes,
                pv: result.pv.clone(),
                best_move_nodes: self.best_move_nodes,
                pass_nodes: self.pass_nodes,
            });
        }
        result
    }

    /// Counts a node, or says the search must stop now (node limit, or the observer).
    #[inline]
    fn enter_node(&mut self) -> bool {
        if self.stopped {
            return true;
        }
        if self.can_stop
            && (self.nodes >= self.node_limit
                || (self.nodes.is_multiple_of(1024) && self.observer.should_stop(self.nodes)))
        {
            self.stopped = true;
            return true;
        }
        self.nodes += 1;
        false
    }

    /// The moves before the node at `ply` that its quiet moves are ordered after.
    fn context(&self, ply: usize) -> Context {
        if self.constants.get(constants::CONTINUATION_HISTORY) == 0 {
            return [None, None];
        }
        [
            self.played[ply],
            ply.checked_sub(1).and_then(|p| self.played[p]),
        ]
    }

    fn update_pv(&mut self, ply: usize, m: Move) {
        self.pv[ply][ply] = Some(m);
        let child_len = self.pv_len[ply + 1].max(ply + 1);
        for i in ply + 1..child_len {
            self.pv[ply][i] = self.pv[ply + 1][i];
        }
        self.pv_len[ply] = child_len;
    }

    fn root(
        &mut self,
        pos: &Chess,
        key: u64,
        root_moves: &mut [Move],
        depth: i32,
        mut alpha: i32,
        beta: i32,
    ) -> i32 {
        self.pv_len[0] = 0;
        let pass_start = self.nodes;
        if self.enter_node() {
            return 0;
        }
        let mut best_score = -INFINITE;
        let mut best_index = 0;
        let mut best_move_nodes = 0;
        for (i, &m) in root_moves.iter().enumerate() {
            let move_start = self.nodes;
            let child = Node::child(pos, key, m);
            self.eval.push(0, pos, Some(m));
            self.played[1] = Some(PieceTo::of(pos.turn(), m));
            let new_depth = depth - 1 + i32::from(child.in_check);
            self.keys.push(child.key);
            let mut score;
            if self.repeats_earlier_position() {
                // Depth 1 goes straight to quiescence, which does not look for repetitions:
                // without this a level searching one ply would walk in circles.
                score = DRAW;
            } else if self.blindness.is_blind(self.game_ply, m) {
                score = -self.blind_score(&child);
            } else if i == 0 {
                score = -self.negamax(&child, new_depth, 1, -beta, -alpha, 0, true);
            } else {
                score = -self.negamax(&child, new_depth, 1, -alpha - 1, -alpha, 0, true);
                if score > alpha && score < beta && !self.stopped {
                    score = -self.negamax(&child, new_depth, 1, -beta, -alpha, 0, true);
                }
            }
            self.keys.pop();
            if self.stopped {
                break;
            }
            if score > best_score {
                best_score = score;
                best_index = i;
                best_move_nodes = self.nodes - move_start;
                if score > alpha {
                    alpha = score;
                    self.update_pv(0, m);
                    let pv = self.pv[0][..self.pv_len[0]]
                        .iter()
                        .map_while(|m| *m)
                        .collect();
                    self.iteration_best = Some((m, score, pv));
                    if score >= beta {
                        break;
                    }
                }
            }
        }
        // The best move leads the next iteration; the others keep their relative order.
        root_moves[..=best_index].rotate_right(1);
        self.pass_nodes = self.nodes - pass_start;
        self.best_move_nodes = best_move_nodes;
        if !self.stopped {
            let bound = if best_score >= beta {
                Bound::Lower
            } else {
                Bound::Exact
            };
            self.tt.store(
                key,
                0,
                Some(PackedMove::new(root_moves[0])),
                best_score,
                self.eval.evaluate(pos, 0),
                depth,
                bound,
            );
        }
        best_score
    }

    /// Whether the position at the end of `self.keys` (a root child) occurred before, since the
    /// last irreversible move: for the side that is ahead, going back is a step towards a
    /// threefold draw.
    fn repeats_earlier_position(&self) -> bool {
        let current = self.keys.len() - 1;
        let key = self.keys[current];
        let mut index = current;
        while index >= 2 {
            index -= 2;
            if self.keys[index] == key {
                return true;
            }
        }
        false
    }

    /// The score of a root child judged without looking at the opponent's answers, from the
    /// child's side to move: its noisy static evaluation (mate and stalemate are still seen:
    /// a player notices that the game is over). A static evaluation is part of the root's
    /// node, so it counts no node of its own.
    fn blind_score(&mut self, child: &Node) -> i32 {
        if child.pos.legal_moves().is_empty() {
            return if child.in_check { mated_in(1) } else { DRAW };
        }
        self.noisy(self.eval.evaluate(&child.pos, 1), child.key)
    }

    /// Whether the node at the end of `self.keys` is drawn by the rules (checkmate excepted).
    fn is_draw(&self, pos: &Chess, key: u64, in_check: bool, floor: usize) -> bool {
        let board = pos.board();
        if (board.pawns() | board.rooks_and_queens()).is_empty() && pos.is_insufficient_material() {
            return true;
        }
        let halfmoves = pos.halfmoves() as usize;
        if halfmoves >= 100 && !(in_check && pos.legal_moves().is_empty()) {
            return true;
        }
        let current = self.keys.len() - 1;
        let lowest = current.saturating_sub(halfmoves).max(floor);
        let mut index = current;
        while index >= lowest + 2 {
            index -= 2;
            if self.keys[index] == key {
                // Once is enough, inside the search path or earlier in the game: the side
                // that is ahead must not step back towards a threefold repetition (Lichess
                // draws it by itself), and the side that is behind may aim for it.
                return true;
            }
        }
        false
    }

    /// The main search below the root. `floor` is the lowest index of `keys` a repetition may
    /// match (a null move cuts the chain).
    #[allow(clippy::too_many_arguments)]
    fn negamax(
        &mut self,
        node: &Node,
        mut depth: i32,
        ply: usize,
        mut alpha: i32,
        mut beta: i32,
        floor: usize,
        allow_null: bool,
    ) -> i32 {
        if depth <= 0 {
            return self.qsearch(node, ply, alpha, beta);
        }
        let (pos, key, in_check) = (&node.pos, node.key, node.in_check);
        (alpha, beta) = match self.enter(node, ply, alpha, beta, floor) {
            Ok(window) => window,
            Err(score) => return score,
        };
        let pv_node = beta - alpha > 1;
        let hit = self.tt.probe(key, ply);
        if let Some(h) = hit
            && !pv_node
            && h.depth >= depth
            && h.bound.cuts(h.score, alpha, beta)
        {
            return h.score;
        }
        let hash_move = hit.and_then(|h| h.mv);
        // Internal iterative reduction: a node the table knows nothing of is probably not worth
        // its full depth, and the shallower search fills the table for the next iteration.
        if hash_move.is_none() && depth >= IIR_MIN_DEPTH {
            depth -= self.constants.get(constants::IIR_REDUCTION);
        }

        let raw_eval = match hit {
            Some(h) => h.eval,
            None => self.eval.evaluate(pos, ply),
        };
        let eval = if in_check {
            -INFINITE
        } else {
            self.noisy(raw_eval, key)
        };
        let us = pos.turn();
        self.evals[ply] = eval;
        // Better than two plies ago (our previous move's node): prune less, reduce less.
        let rising = !in_check && (ply < 2 || eval > self.evals[ply - 2]);
        let uses_improving = self.constants.get(constants::IMPROVING) == 1;
        let (improving, not_improving) = (uses_improving && rising, uses_improving && !rising);

        if !pv_node
            && !in_check
            && !is_mate(beta)
            && let Some(score) =
                self.prune_before_moves(node, depth, ply, eval, beta, allow_null, improving)
        {
            return score;
        }

        let mut moves = pos.legal_moves();
        if moves.is_empty() {
            return if in_check { mated_in(ply) } else { DRAW };
        }
        let mut scores = [0i32; 256];
        let context = self.context(ply);
        score_moves(
            &moves,
            &mut scores,
            pos,
            hash_move,
            self.heuristics,
            ply,
            &context,
        );

        let original_alpha = alpha;
        let mut best_score = -INFINITE;
        let mut best_move = None;
        let mut quiets_tried = MoveList::new();
        for i in 0..moves.len() {
            let m = pick(&mut moves, &mut scores, i);
            let tried = Tried {
                index: i,
                quiet: is_quiet(m),
                pv_node,
                in_check,
                not_improving,
            };
            if best_score > -MATE_BOUND
                && (self.prunes_late(&tried, depth)
                    || self.prunes_hopeless(pos, m, &tried, depth, eval, alpha))
            {
                continue;
            }
            let score = self.search_child(node, m, tried, depth, ply, (alpha, beta), floor);
            if self.stopped {
                return 0;
            }
            if score > best_score {
                best_score = score;
                if score > alpha {
                    best_move = Some(m);
                    alpha = score;
                    if pv_node {
                        self.update_pv(ply, m);
                    }
                    if score >= beta {
                        if tried.quiet {
                            let tried = quiets_tried.as_slice();
                            self.heuristics.reward(us, ply, depth, m, tried, &context);
                        }
                        break;
                    }
                }
            }
            if tried.quiet {
                quiets_tried.push(m);
            }
        }

        let bound = Bound::of(best_score, original_alpha, beta);
        self.tt.store(
            key,
            ply,
            best_move.map(PackedMove::new).or(hash_move),
            best_score,
            raw_eval,
            depth,
            bound,
        );
        best_score
    }

    /// What every node checks before searching: the node budget and stop, draws, the ply
    /// limit, and mate distance pruning (no line from here beats a mate already found nearer
    /// the root). `Err(score)` ends the node; `Ok` gives the window narrowed by mate distance.
    fn enter(
        &mut self,
        node: &Node,
        ply: usize,
        alpha: i32,
        beta: i32,
        floor: usize,
    ) -> Result<(i32, i32), i32> {
        self.pv_len[ply] = ply;
        if self.enter_node() {
            return Err(0);
        }
        self.seldepth = self.seldepth.max(ply);
        if self.is_draw(&node.pos, node.key, node.in_check, floor) {
            return Err(DRAW);
        }
        if ply >= MAX_PLY - 1 {
            return Err(self.eval.evaluate(&node.pos, ply));
        }
        let (alpha, beta) = (alpha.max(mated_in(ply)), beta.min(mate_in(ply + 1)));
        if alpha >= beta {
            return Err(alpha);
        }
        Ok((alpha, beta))
    }

    /// Pruning before any move is tried, in a non-PV node not in check: reverse futility (far
    /// above beta with little depth left, assume it holds; a smaller margin while improving)
    /// and the null move (if passing still fails high, a real move will too; not in
    /// zugzwang-prone positions without pieces).
    #[allow(clippy::too_many_arguments)]
    fn prune_before_moves(
        &mut self,
        node: &Node,
        depth: i32,
        ply: usize,
        eval: i32,
        beta: i32,
        allow_null: bool,
        improving: bool,
    ) -> Option<i32> {
        let c = self.constants;
        if depth <= c.get(constants::RFP_MAX_DEPTH)
            && eval - c.get(constants::RFP_MARGIN) * (depth - i32::from(improving)) >= beta
        {
            return Some(eval);
        }
        let board = node.pos.board();
        let us = node.pos.turn();
        let has_pieces = (board.by_color(us) & !(board.pawns() | board.kings())).any();
        if allow_null && depth >= c.get(constants::NMP_MIN_DEPTH) && eval >= beta && has_pieces {
            return self.null_move(node, depth, ply, eval, beta);
        }
        None
    }

    /// Late move pruning: at shallow depth, quiet moves far down the list rarely matter (half
    /// as many are tried when the position is not improving).
    fn prunes_late(&self, tried: &Tried, depth: i32) -> bool {
        let c = self.constants;
        let mut quota =
            c.get(constants::LMP_BASE) + c.get(constants::LMP_PER_DEPTH_SQUARED) * depth * depth;
        if tried.not_improving {
            quota /= 2;
        }
        !tried.pv_node
            && !tried.in_check
            && tried.quiet
            && depth <= c.get(constants::LMP_MAX_DEPTH)
            && tried.index as i32 >= quota
    }

    /// Futility and exchange pruning at shallow depth, not in check: a quiet move in a non-PV
    /// node when even a margin above the static evaluation falls short of alpha, and any move
    /// whose exchange loses more than a margin that grows with the depth left.
    fn prunes_hopeless(
        &self,
        pos: &Chess,
        m: Move,
        tried: &Tried,
        depth: i32,
        eval: i32,
        alpha: i32,
    ) -> bool {
        let c = self.constants;
        if tried.in_check {
            return false;
        }
        if tried.quiet
            && !tried.pv_node
            && depth <= c.get(constants::FP_MAX_DEPTH)
            && eval + c.get(constants::FP_BASE) + c.get(constants::FP_PER_DEPTH) * depth <= alpha
        {
            return true;
        }
        if depth > c.get(constants::SEE_MAX_DEPTH) {
            return false;
        }
        let threshold = if tried.quiet {
            -c.get(constants::SEE_QUIET_MARGIN) * depth
        } else {
            -c.get(constants::SEE_CAPTURE_MARGIN) * depth * depth
        };
        !see_at_least(pos.board(), pos.turn(), m, threshold)
    }

    /// The null-move search: passing and searching shallower. `Some(score)` when it fails
    /// high (or the search was stopped: 0), `None` when the real moves must be searched.
    fn null_move(
        &mut self,
        node: &Node,
        depth: i32,
        ply: usize,
        eval: i32,
        beta: i32,
    ) -> Option<i32> {
        let (pos, key) = (&node.pos, node.key);
        let c = self.constants;
        let reduction = c.get(constants::NMP_BASE_REDUCTION)
            + depth / c.get(constants::NMP_DEPTH_DIVISOR)
            + ((eval - beta) / c.get(constants::NMP_EVAL_DIVISOR)).min(3);
        let null_pos = pos.clone().swap_turn().ok()?;
        let mut null_key = key ^ Zobrist64::zobrist_for_white_turn().0;
        if let Some(ep) = pos.ep_square(EnPassantMode::Legal) {
            null_key ^= Zobrist64::zobrist_for_en_passant_file(ep.file()).0;
        }
        let null_node = Node {
            pos: null_pos,
            key: null_key,
            in_check: false,
        };
        self.eval.push(ply, pos, None);
        self.keys.push(null_key);
        self.played[ply + 1] = None;
        let child_floor = self.keys.len() - 1;
        let score = -self.negamax(
            &null_node,
            depth - 1 - reduction,
            ply + 1,
            -beta,
            -beta + 1,
            child_floor,
            false,
        );
        self.keys.pop();
        if self.stopped {
            return Some(0);
        }
        (score >= beta).then(|| if is_mate(score) { beta } else { score })
    }

    /// Searches move `m` of `node`, the `tried.index`th in order: the first with the full
    /// window, the later ones by [`Self::later_move`], a quiet one reduced when it is late.
    #[allow(clippy::too_many_arguments)]
    fn search_child(
        &mut self,
        node: &Node,
        m: Move,
        tried: Tried,
        depth: i32,
        ply: usize,
        (alpha, beta): (i32, i32),
        floor: usize,
    ) -> i32 {
        let child = Node::child(&node.pos, node.key, m);
        self.eval.push(ply, &node.pos, Some(m));
        self.played[ply + 1] = Some(PieceTo::of(node.pos.turn(), m));
        let gives_check = child.in_check;
        let new_depth = depth - 1 + i32::from(gives_check);
        self.keys.push(child.key);
        let score = if tried.index == 0 {
            -self.negamax(&child, new_depth, ply + 1, -beta, -alpha, floor, true)
        } else {
            let reduction = if depth >= self.constants.get(constants::LMR_MIN_DEPTH)
                && tried.index >= 2
                && tried.quiet
                && !tried.in_check
                && !gives_check
            {
                let us = node.pos.turn();
                self.late_move_reduction(depth, new_depth, &tried, us, m)
            } else {
                0
            };
            self.later_move(&child, new_depth, reduction, ply, (alpha, beta), floor)
        };
        self.keys.pop();
        score
    }

    /// How much shallower a late quiet move is searched first (late move reductions): less in
    /// PV nodes and for moves with a good history, more when not improving, never below
    /// depth 1.
    fn late_move_reduction(
        &self,
        depth: i32,
        new_depth: i32,
        tried: &Tried,
        us: Color,
        m: Move,
    ) -> i32 {
        let mut reduction = self.constants.lmr()[depth.min(63) as usize][tried.index.min(63)];
        if tried.pv_node {
            reduction -= 1;
        }
        if tried.not_improving {
            reduction += 1;
        }
        if self.heuristics.history(us, m) > 4096 {
            reduction -= 1;
        }
        reduction.clamp(0, new_depth - 1)
    }

    /// A move after the first (principal variation search): a reduced null-window search,
    /// then the full depth if it beats alpha, then the full window if it lands inside it.
    fn later_move(
        &mut self,
        child: &Node,
        new_depth: i32,
        reduction: i32,
        ply: usize,
        (alpha, beta): (i32, i32),
        floor: usize,
    ) -> i32 {
        let mut score = -self.negamax(
            child,
            new_depth - reduction,
            ply + 1,
            -alpha - 1,
            -alpha,
            floor,
            true,
        );
        if score > alpha && reduction > 0 && !self.stopped {
            score = -self.negamax(child, new_depth, ply + 1, -alpha - 1, -alpha, floor, true);
        }
        if score > alpha && score < beta && !self.stopped {
            score = -self.negamax(child, new_depth, ply + 1, -beta, -alpha, floor, true);
        }
        score
    }

    fn noisy(&self, raw_eval: i32, key: u64) -> i32 {
        add_noise(raw_eval, key, &self.noise)
    }

    /// Quiescence: captures and queen promotions until the position is quiet (all evasions
    /// when in check). It neither probes nor stores the transposition table: measured, the
    /// cache misses cost more than the few cutoffs save (bench: 4% more nodes, 15-20% more
    /// nodes per second).
    fn qsearch(&mut self, node: &Node, ply: usize, mut alpha: i32, beta: i32) -> i32 {
        let (pos, key, in_check) = (&node.pos, node.key, node.in_check);
        self.pv_len[ply.min(MAX_PLY)] = ply.min(MAX_PLY);
        if self.enter_node() {
            return 0;
        }
        self.seldepth = self.seldepth.max(ply);
        let board = pos.board();
        if (board.pawns() | board.rooks_and_queens()).is_empty() && pos.is_insufficient_material() {
            return DRAW;
        }
        if ply >= MAX_PLY - 1 {
            return self.eval.evaluate(pos, ply);
        }
        let mut moves;
        let mut scores = [0i32; 256];
        let mut best_score;
        let stand_pat;
        if in_check {
            moves = pos.legal_moves();
            if moves.is_empty() {
                return mated_in(ply);
            }
            score_moves(
                &moves,
                &mut scores,
                pos,
                None,
                self.heuristics,
                ply,
                &self.context(ply),
            );
            best_score = -INFINITE;
            stand_pat = -INFINITE;
        } else {
            stand_pat = self.noisy(self.eval.evaluate(pos, ply), key);
            if stand_pat >= beta {
                return stand_pat;
            }
            alpha = alpha.max(stand_pat);
            best_score = stand_pat;
            moves = MoveList::new();
            captures_and_promotions(pos, &mut moves);
            score_captures(&moves, &mut scores);
        }
        for i in 0..moves.len() {
            let m = pick(&mut moves, &mut scores, i);
            if !in_check {
                // Delta pruning: even winning the piece outright cannot reach alpha.
                let gain = m.capture().map_or(0, see_value)
                    + m.promotion()
                        .map_or(0, |p| see_value(p) - see_value(Role::Pawn));
                if stand_pat + gain + self.constants.get(constants::QS_DELTA) <= alpha {
                    continue;
                }
                if !see_non_negative(board, pos.turn(), m) {
                    continue;
                }
            }
            let child = Node::child(pos, key, m);
            self.eval.push(ply, pos, Some(m));
            let score = -self.qsearch(&child, ply + 1, -beta, -alpha);
            if self.stopped {
                return 0;
            }
            if score > best_score {
                best_score = score;
                if score > alpha {
                    alpha = score;
                    if score >= beta {
                        break;
                    }
                }
            }
        }
        best_score
    }
}

/// Where a move stands in its node's move loop, for the reductions.
#[derive(Clone, Copy)]
struct Tried {
    index: usize,
    quiet: bool,
    pv_node: bool,
    in_check: bool,
    /// The node's static evaluation is no better than at our previous move (and the
    /// `improving` constant is on).
    not_improving: bool,
}

/// A position in the search with what its parent already knows about it.
struct Node {
    pos: Chess,
    key: u64,
    in_check: bool,
}

impl Node {
    /// The position after `m` (legal in `parent`), its key and whether it is check.
    #[inline]
    fn child(parent: &Chess, key: u64, m: Move) -> Node {
        let mut pos = parent.clone();
        pos.play_unchecked(m);
        let key = next_key(parent, key, m, &pos);
        let in_check = pos.is_check();
        Node { pos, key, in_check }
    }
}

/// The Zobrist key after `m`: shakmaty's incremental update where it has one, otherwise
/// recomputed (king and castling-right moves, double pushes, positions with an en passant
/// square). Same key as [`Game`] computes, so repetitions against the game history are seen.
#[inline]
fn next_key(pos: &Chess, key: u64, m: Move, child: &Chess) -> u64 {
    match pos.update_zobrist_hash(Zobrist64(key), m, EnPassantMode::Legal) {
        Some(k) => k.0,
        None => child.zobrist_hash::<Zobrist64>(EnPassantMode::Legal).0,
    }
}
