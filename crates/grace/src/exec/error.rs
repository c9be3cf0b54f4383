//! What stops a run: its plan, or something outside it.

use crate::plan::PlanError;

/// Why a run did not end with a report.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The plan is not valid; none of it ran.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Not a fault of the plan: the run was stopped from outside (its
    /// client went away, or the request ran out of time).
    #[error("the run was cancelled")]
    Cancelled,
    /// A run that asked the asker a question was continued by an executor
    /// that does not run the agent loop (`planner.strategy` is not `agent`,
    /// or the generator calls no tools).
    #[error(
        "this run can only be continued by the agent loop (planner.strategy: agent with a language model that calls tools)"
    )]
    NotAnAgent,
}

/// A run's result.
pub type Result<T> = std::result::Result<T, ExecError>;
