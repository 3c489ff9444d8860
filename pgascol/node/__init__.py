"""Node teams: which ranks share a node (topology), how a team is configured
(config, the calibration file) and how it is set up over an MPI communicator
(team.NodeTeam)."""
