! SPDX-License-Identifier: Apache-2.0
!
! The Fortran twin of traffic.c: the same phases and sizes, so check_traffic.py expects the same report. Built
! twice, with `include 'mpif.h'` and with `use mpi` (-DUSE_MPI_MODULE). No iteration markers: Fortran cannot test
! for a weak symbol, and the report must then say "no iteration markers".
program traffic
#ifdef USE_MPI_MODULE
  use mpi
  implicit none
#else
  implicit none
  include 'mpif.h'
#endif
  integer, parameter :: max_elements = 256
  integer :: rounds, rank, nranks, ierr, k, p, world, n, sub_rank, sub_size, split, dup, next, prev
  integer :: split_group, world_group, request, sub_rank_of(1), world_rank_of(1)
  integer :: requests(16), persistent(2), statuses(MPI_STATUS_SIZE, 16)
  integer :: ints(max_elements), ints_in(max_elements)
  double precision :: doubles(max_elements), doubles_in(max_elements)
  character(len=max_elements) :: chars, chars_in
  character(len=32) :: arg

  rounds = 3
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) rounds
  end if
  ints = 0
  doubles = 0
  chars = ' '
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)

  ! A: blocking, MPI_COMM_WORLD
  do k = 0, rounds - 1
    do p = 0, nranks - 1
      if (p == rank) cycle
      if (rank < p) then
        call MPI_Send(ints, elements(rank, p, k), MPI_INTEGER, p, 1, MPI_COMM_WORLD, ierr)
        call MPI_Recv(ints_in, max_elements, MPI_INTEGER, p, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      else
        call MPI_Recv(ints_in, max_elements, MPI_INTEGER, p, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        call MPI_Send(ints, elements(rank, p, k), MPI_INTEGER, p, 1, MPI_COMM_WORLD, ierr)
      end if
    end do
  end do

  ! B: nonblocking on a split communicator in reverse rank order
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, split, ierr)
  call MPI_Comm_rank(split, sub_rank, ierr)
  call MPI_Comm_size(split, sub_size, ierr)
  call MPI_Comm_group(split, split_group, ierr)
  call MPI_Comm_group(MPI_COMM_WORLD, world_group, ierr)
  do k = 0, rounds - 1
    n = 0
    do p = 0, sub_size - 1
      if (p == sub_rank) cycle
      sub_rank_of(1) = p
      call MPI_Group_translate_ranks(split_group, 1, sub_rank_of, world_group, world_rank_of, ierr)
      world = world_rank_of(1)
      n = n + 1
      call MPI_Irecv(doubles_in(8 * n), 8, MPI_DOUBLE_PRECISION, p, 2, split, requests(n), ierr)
      n = n + 1
      call MPI_Isend(doubles, mod(elements(rank, world, k), 9), MPI_DOUBLE_PRECISION, p, 2, split, &
                     requests(n), ierr)
    end do
    call MPI_Waitall(n, requests, statuses, ierr)
  end do
  call MPI_Group_free(split_group, ierr)
  call MPI_Group_free(world_group, ierr)
  call MPI_Comm_free(split, ierr)

  ! C: ring of characters on a duplicate
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  next = mod(rank + 1, nranks)
  prev = mod(rank + nranks - 1, nranks)
  do k = 0, rounds - 1
    call MPI_Sendrecv(chars, elements(rank, next, k), MPI_CHARACTER, next, 3, chars_in, max_elements, &
                      MPI_CHARACTER, prev, 3, dup, MPI_STATUS_IGNORE, ierr)
  end do

  ! D: persistent requests
  call MPI_Recv_init(ints_in, 5, MPI_INTEGER, prev, 4, dup, persistent(1), ierr)
  call MPI_Send_init(ints, 5, MPI_INTEGER, next, 4, dup, persistent(2), ierr)
  do k = 0, rounds - 1
    call MPI_Startall(2, persistent, ierr)
    call MPI_Waitall(2, persistent, statuses, ierr)
  end do
  call MPI_Request_free(persistent(1), ierr)
  call MPI_Request_free(persistent(2), ierr)
  call MPI_Comm_free(dup, ierr)

  ! E: collectives
  do k = 0, rounds - 1
    call MPI_Bcast(ints, 100, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call MPI_Allreduce(doubles, doubles_in, 16, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Gather(ints, 3, MPI_INTEGER, ints_in, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Alltoall(ints, 2, MPI_INTEGER, ints_in, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call MPI_Ibcast(chars, 10, MPI_CHARACTER, nranks - 1, MPI_COMM_WORLD, request, ierr)
  call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
  call MPI_Iallreduce(MPI_IN_PLACE, ints, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, request, ierr)
  call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)

  ! F: MPI_PROC_NULL
  call MPI_Send(ints, 7, MPI_INTEGER, MPI_PROC_NULL, 5, MPI_COMM_WORLD, ierr)

  if (rank == 0) print '(a, i0, a, i0, a)', 'traffic: ', nranks, ' ranks, ', rounds, ' rounds done'
  call MPI_Finalize(ierr)

contains

  integer function elements(from, to, round)
    integer, intent(in) :: from, to, round
    elements = 1 + 7 * from + 3 * to + round
  end function elements

end program traffic
